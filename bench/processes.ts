/**
 * Child processes of the bench: the service, the bare baselines and nginx. Each runs in its own
 * process group, so that it and anything it forks (nginx workers) can be stopped together; every
 * child is killed when the bench ends, however it ends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
/** dist/bench → the repository's compiled output. */
export const SERVER_ENTRY = path.resolve(here, '../src/server.js');
/** The Node.js flags and environment `npm start` runs the service with: the bench measures the service as it is started. */
const START_SCRIPT = (JSON.parse(readFileSync(path.resolve(here, '../../package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start.split(/\s+/);
export const SERVER_NODE_FLAGS = START_SCRIPT.filter((word) => word.startsWith('--'));
/** The `NAME=value` words before `node`, such as the allocator's settings. */
export const SERVER_START_ENV: Record<string, string> = Object.fromEntries(
  START_SCRIPT.slice(0, START_SCRIPT.indexOf('node'))
    .map((word) => /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(word))
    .filter((match) => match !== null)
    .map((match) => [match[1]!, match[2]!]),
);
const BASELINE_DIR = path.join(here, 'baselines');

export interface Child {
  name: string;
  process: ChildProcess;
  pid: number;
  /** The last few KiB the process printed. */
  output(): string;
  stop(): Promise<void>;
}

const running = new Set<Child>();
let stopping = false;

/** From now on no child may start: the bench is ending (a signal, the watchdog). */
export function refuseNewChildren(): void {
  stopping = true;
}

export const isStopping = (): boolean => stopping;

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

/** Kills every child still running, at once; safe inside an 'exit' handler. */
export function killAllNow(): void {
  for (const child of running) killGroup(child.pid, 'SIGKILL');
  running.clear();
}

export function startChild(name: string, command: string, args: string[], env: NodeJS.ProcessEnv): Child {
  if (stopping) throw new Error(`not starting ${name}: the bench is stopping`);
  const proc = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  if (proc.pid === undefined) throw new Error(`${name} could not be started`);
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-8192);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const pid = proc.pid;
  const child: Child = {
    name,
    process: proc,
    pid,
    output: () => output,
    stop: async () => {
      running.delete(child);
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = once(proc, 'exit');
      killGroup(pid, 'SIGTERM');
      const timer = setTimeout(() => killGroup(pid, 'SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      // Whatever the leader left behind in its group.
      killGroup(pid, 'SIGKILL');
    },
  };
  running.add(child);
  proc.once('exit', () => running.delete(child));
  return child;
}

/** A free loopback port (there is a small window before the child binds it). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  server.close();
  await once(server, 'close');
  return port;
}

/** Polls `url` until it answers 200, or fails with the child's output. */
export async function waitForHttp(url: string, child: Child, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.process.exitCode !== null) throw new Error(`${child.name} exited with ${child.process.exitCode}:\n${child.output()}`);
    try {
      const response = await fetch(url);
      await response.arrayBuffer();
      if (response.status === 200) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`${child.name} did not become ready at ${url}:\n${child.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Starts one of bench/baselines/*.js and waits for the {"port":N} line it prints. */
export async function startBaseline(name: string, script: string, env: Record<string, string>): Promise<{ child: Child; origin: string }> {
  const child = startChild(name, process.execPath, [path.join(BASELINE_DIR, script)], { PATH: process.env.PATH ?? '', ...env });
  const port = await new Promise<number>((resolve, reject) => {
    // The database floor initialises an embedded PostgreSQL first: seconds, more on a busy machine.
    const timer = setTimeout(() => reject(new Error(`${name} did not start:\n${child.output()}`)), 120_000);
    let buffered = '';
    child.process.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const match = /\{"port":(\d+)\}/.exec(buffered);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.process.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code}:\n${child.output()}`));
    });
  });
  return { child, origin: `http://127.0.0.1:${port}` };
}

/**
 * CPU time (user + system, all threads) used so far by the process group `pid` leads, in seconds:
 * the child and whatever it forked (nginx's worker). Children are started as group leaders.
 */
const CLOCK_TICKS = 100;
export function cpuSeconds(pid: number): number | undefined {
  let total = 0;
  let found = false;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name, which is in parentheses and may contain spaces.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(entry) !== pid && Number(fields[2]) !== pid) continue;
      total += (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
      found = true;
    } catch {
      // Gone meanwhile.
    }
  }
  return found ? total : undefined;
}

/**
 * CPU time (user + system) one process has used so far, in seconds; with `mainThreadOnly`, only
 * its main thread: for Node.js, the event loop (JavaScript), without the
 * libuv thread pool (file system calls) and V8's helper threads (GC, compilers).
 */
export function processCpuSeconds(pid: number, mainThreadOnly = false): number | undefined {
  try {
    const stat = readFileSync(mainThreadOnly ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** Every process below `pid` (children, their children…), from /proc: the embedded database server's processes. */
export function descendantsOf(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The parent pid is the second field after the command, which is in parentheses and may hold spaces.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // Gone meanwhile.
    }
  }
  const found: number[] = [];
  for (let queue = [pid]; queue.length > 0; ) {
    const next = children.get(queue.pop()!) ?? [];
    found.push(...next);
    queue.push(...next);
  }
  return found;
}

/**
 * Proportional set size of several processes together, in bytes: memory they share (a database
 * server's shared buffers) is counted once across them rather than once per process.
 */
export function pssOf(pids: readonly number[]): { bytes: number; processes: number } {
  let bytes = 0;
  let processes = 0;
  for (const pid of pids) {
    try {
      const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
      bytes += Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) * 1024;
      processes++;
    } catch {
      // Gone meanwhile.
    }
  }
  return { bytes, processes };
}

/**
 * Starts a new peak: VmHWM drops to the current RSS (`clear_refs` 5), so that the next reading is
 * the peak of what ran since. False where the kernel or the permissions do not allow it.
 */
export function resetPeakMemory(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** VmHWM and VmRSS of a process, in bytes. */
export function memoryOf(pid: number): { hwm: number; rss: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    return { hwm: kib('VmHWM'), rss: kib('VmRSS') };
  } catch {
    return undefined;
  }
}
