import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** `sh -c` script: mounts a small tmpfs on $0, then execs the rest; run inside `unshare -rm`. */
export const mountSmallDisk = (size: string) => `mount -t tmpfs -o size=${size} tmpfs "$0" && exec "$@"`;

/** A command prefix that runs a command with a tmpfs of `size` mounted on `mountPoint`, seen only by it. */
export const onSmallDisk = (mountPoint: string, size: string) => ['unshare', '-rm', 'sh', '-c', mountSmallDisk(size), mountPoint];

/** Why a private small disk cannot be had on this machine, or false when it can. */
export function whyNoSmallDisk(): string | false {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'disk-full-probe-'));
  try {
    const probe = spawnSync('unshare', ['-rm', 'sh', '-c', mountSmallDisk('2m'), dir, 'true']);
    if (probe.status === 0) return false;
    return `cannot mount a small tmpfs here (unshare -rm: ${probe.error?.message ?? probe.stderr.toString().trim()})`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
