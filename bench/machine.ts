/** The machine a run measured: printed with every result, since absolute numbers only hold there. */
import { readFileSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Machine } from './results.js';

function read(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function cpuModel(): string {
  const model = /^model name\s*:\s*(.+)$/m.exec(read('/proc/cpuinfo'))?.[1];
  return model?.trim() ?? os.cpus()[0]?.model ?? 'unknown';
}

function distro(): string {
  const pretty = /^PRETTY_NAME="?([^"\n]+)"?/m.exec(read('/etc/os-release'))?.[1];
  return `${pretty ?? os.type()} (kernel ${os.release()})`;
}

/** The file system holding `dir`: device, type, size, and whether the disk spins. */
async function disk(dir: string): Promise<string> {
  const mounts = read('/proc/mounts')
    .split('\n')
    .map((line) => line.split(' '))
    .filter((fields) => fields.length >= 3)
    .map(([device, mountPoint, type]) => ({ device: device!, mountPoint: mountPoint!.replace(/\\040/g, ' '), type: type! }));
  const resolved = path.resolve(dir);
  const mount = mounts
    .filter((m) => resolved === m.mountPoint || resolved.startsWith(m.mountPoint.endsWith('/') ? m.mountPoint : `${m.mountPoint}/`))
    .sort((a, b) => b.mountPoint.length - a.mountPoint.length)[0];
  const stats = await statfs(dir).catch(() => undefined);
  const size = stats ? `${((stats.blocks * stats.bsize) / 1024 ** 3).toFixed(0)} GiB, ${((stats.bavail * stats.bsize) / 1024 ** 3).toFixed(0)} GiB free` : '';
  if (!mount) return size || 'unknown';
  const base = path.basename(mount.device).replace(/p?\d+$/, '');
  const rotational = read(`/sys/block/${base}/queue/rotational`).trim();
  const kind = base.startsWith('vd')
    ? 'virtio virtual disk'
    : rotational === '0'
      ? 'non-rotating (SSD or virtual)'
      : rotational === '1'
        ? 'reports itself as rotating'
        : '';
  return [`${mount.device} (${mount.type}) at ${mount.mountPoint}`, size, kind].filter(Boolean).join(', ');
}

export async function machineInfo(tempDir: string, nginx: string): Promise<Machine> {
  return {
    cpu: cpuModel(),
    cores: os.cpus().length,
    memory: `${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB`,
    node: process.version,
    os: distro(),
    disk: await disk(tempDir),
    nginx,
  };
}
