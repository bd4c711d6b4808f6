import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Test } from 'tap';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The command as installed: the built entry of packages/cli, run by plain node. */
export const CLI = path.join(ROOT, 'packages', 'cli', 'dist', 'cli.js');

const run = promisify(execFile);

let built: Promise<unknown> | undefined;
/** Builds the SDK and the CLI (tsc -b: only what changed), as `npm run build` does. */
export function buildPackages(): Promise<unknown> {
  built ??= run(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-b', path.join(ROOT, 'packages', 'cli')], { cwd: ROOT });
  return built;
}

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** A home of its own for the command: config and state folders, removed after the test. */
export async function cliHome(t: Test): Promise<Record<string, string>> {
  const home = await mkdtemp(path.join(tmpdir(), 'filestore-cli-'));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  return { HOME: home, XDG_CONFIG_HOME: path.join(home, 'config'), XDG_STATE_HOME: path.join(home, 'state') };
}

/** Starts the command with pipes for its streams (not a terminal) and a clean environment. */
export function spawnCli(args: string[], env: Record<string, string>, cwd?: string): ChildProcess {
  return spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
}

/** Runs the command to its end; `input` is its stdin. */
export function runCli(args: string[], env: Record<string, string>, options: { input?: string; cwd?: string } = {}): Promise<CliResult> {
  const child = spawnCli(args, env, options.cwd);
  return finished(child, options.input);
}

export function finished(child: ChildProcess, input?: string): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin!.end(input ?? '');
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}
