/**
 * Stopping the service the way people start it: `npm start` (or `npm run start:built`) under a
 * supervisor or a script that signals npm's pid, and a terminal's Ctrl-C, which signals the whole
 * foreground process group. Each case starts the real scripts with the embedded PostgreSQL server
 * under a DATA_DIR of its own, and checks what an operator would: npm's exit code, the port, the
 * service's process, the database server's processes, and the log's last line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { seedEmbeddedCluster } from './helpers/database.js';
import { waitFor } from './helpers/process.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** `npm start` compiles first when the sources changed since the last build: tsc and vite, slow on a busy machine. */
const READY_DEADLINE_MS = 300_000;
/** Everything must be gone within this much of the signal; an idle service needs about a second. */
const GRACE_SECONDS = 10;
/** Longer than the service takes a repeated signal for the copy npm forwards of the first. */
const PAST_REPEAT_WINDOW_MS = 2_000;

type Script = 'start' | 'start:built';

interface Started {
  npm: ChildProcess;
  port: number;
  dataDir: string;
  /** The service's own process (node, under npm and maybe a shell). */
  servicePid: number;
  /** The embedded server's postmaster and its children, as they were once the service was ready. */
  postgresPids: number[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): string;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

async function portIsFree(port: number): Promise<boolean> {
  const server = net.createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Every live process whose command line or parent ties it to the embedded server of `dataDir`. */
async function postgresProcessesOf(dataDir: string, known: readonly number[] = []): Promise<number[]> {
  const clusterDir = path.join(dataDir, 'postgres');
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    try {
      const [cmdline, stat] = await Promise.all([readFile(`/proc/${pid}/cmdline`, 'utf8'), readFile(`/proc/${pid}/stat`, 'utf8')]);
      // The field after the parenthesised name: state, then the parent's pid.
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state === 'Z') continue;
      const args = cmdline.split('\0');
      const postmaster = path.basename(args[0] ?? '') === 'postgres' && args.includes(clusterDir);
      if (postmaster || known.includes(pid) || known.includes(Number(ppid))) found.push(pid);
    } catch {
      // Gone while being read.
    }
  }
  return found;
}

interface LogLine {
  msg?: string;
  pid?: number;
}

function logLines(output: string): LogLine[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

async function startWithNpm(t: Test, script: Script): Promise<Started> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'filestore-start-signals-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  await seedEmbeddedCluster(dataDir);
  const port = await freePort();
  const npm = spawn('npm', script === 'start' ? ['start'] : ['run', script], {
    cwd: ROOT,
    // No DATABASE_URL: the service starts its own PostgreSQL server under DATA_DIR.
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? tmpdir(),
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      SHUTDOWN_GRACE_SECONDS: String(GRACE_SECONDS),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A process group of its own, as a terminal gives a command: what the Ctrl-C case signals.
    detached: true,
  });
  let output = '';
  npm.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    npm.once('exit', (code, signal) => resolve({ code, signal })),
  );

  let servicePid: number | undefined;
  let postgresPids: number[] = [];
  // Whatever a failed case left running is killed: npm's group (the shell and node stay in it when
  // npm is gone), the service, and the database server by the pids seen while it ran.
  t.teardown(async () => {
    for (const pid of [-(npm.pid as number), servicePid ?? 0, ...(await postgresProcessesOf(dataDir, postgresPids))]) {
      if (pid === 0) continue;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  });

  let npmExit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  void exited.then((exit) => (npmExit = exit));
  await waitFor(
    `npm ${script} to answer /ready on port ${port}`,
    async () => {
      if (npmExit) throw new Error(`npm ${script} exited (${JSON.stringify(npmExit)}) before it was ready:\n${output}`);
      const ready = await fetch(`http://127.0.0.1:${port}/ready`).catch(() => undefined);
      return ready?.status === 200;
    },
    READY_DEADLINE_MS,
    250,
  );
  servicePid = logLines(output).find((line) => line.msg?.startsWith('Server listening at'))?.pid;
  if (!servicePid) throw new Error(`no "Server listening" line:\n${output}`);
  postgresPids = await postgresProcessesOf(dataDir);
  // The postmaster is found by its command line; its children (checkpointer, walwriter...) by their parent.
  postgresPids = await postgresProcessesOf(dataDir, postgresPids);
  return { npm, port, dataDir, servicePid, postgresPids, exited, output: () => output };
}

/** Resolves with npm's exit, or with undefined if it has not exited by `deadline` (a Date.now() value). */
async function exitBy(started: Started, deadline: number): Promise<{ code: number | null; signal: NodeJS.Signals | null } | undefined> {
  return Promise.race([started.exited, sleep(Math.max(0, deadline - Date.now())).then(() => undefined)]);
}

/** Waits until `deadline` for the port, the service and the database server to be gone, then says what is left. */
async function leftBehind(started: Started, deadline: number): Promise<{ portHeld: boolean; service: boolean; postgres: number[] }> {
  const check = async () => ({
    portHeld: !(await portIsFree(started.port)),
    service: alive(started.servicePid),
    postgres: await postgresProcessesOf(started.dataDir, started.postgresPids),
  });
  for (;;) {
    const left = await check();
    if ((!left.portHeld && !left.service && left.postgres.length === 0) || Date.now() > deadline) return left;
    await sleep(100);
  }
}

async function assertStoppedCleanly(t: Test, started: Started, signalledAt: number): Promise<void> {
  const deadline = signalledAt + GRACE_SECONDS * 1000;
  t.same(await exitBy(started, deadline), { code: 0, signal: null }, 'npm exits with code 0 within the grace period');
  t.same(await leftBehind(started, deadline), { portHeld: false, service: false, postgres: [] }, 'the port is free, the service and every postgres process of its DATA_DIR are gone');
  t.notOk(existsSync(path.join(started.dataDir, 'postgres', 'postmaster.pid')), 'the database server shut down (no postmaster.pid left)');
  const lines = logLines(started.output()).filter((line) => line.pid === started.servicePid);
  t.equal(lines.filter((line) => line.msg === 'shutting down').length, 1, 'one shutdown');
  t.equal(lines.at(-1)?.msg, 'stopped', 'the last line the service logs says it stopped');
}

for (const script of ['start', 'start:built'] as const) {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    t.test(`${signal} to the pid of \`npm ${script === 'start' ? 'start' : `run ${script}`}\` stops the service and its database`, async (t) => {
      const started = await startWithNpm(t, script);
      const signalledAt = Date.now();
      process.kill(started.npm.pid as number, signal);
      await assertStoppedCleanly(t, started, signalledAt);
    });
  }
}

// The terminal sends SIGINT to npm and to the service, and npm forwards its own copy: a single
// Ctrl-C must still be one graceful shutdown. The copy arrives a moment later or not at all,
// depending on scheduling, so the case runs a few times.
t.test('a Ctrl-C (SIGINT to the whole process group) is one graceful shutdown', async (t) => {
  for (let round = 1; round <= 3; round++) {
    await t.test(`round ${round}`, async (t) => {
      const started = await startWithNpm(t, 'start:built');
      const signalledAt = Date.now();
      process.kill(-(started.npm.pid as number), 'SIGINT');
      await assertStoppedCleanly(t, started, signalledAt);
    });
  }
});

t.test('a second SIGTERM to npm, well after the first, stops the service at once with code 1 and leaves nothing', async (t) => {
  const started = await startWithNpm(t, 'start:built');
  // A request head that trickles in holds the shutdown open for the whole grace period.
  const slow = net.connect(started.port, '127.0.0.1');
  slow.on('error', () => {});
  t.teardown(() => slow.destroy());
  await once(slow, 'connect');
  slow.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
  const trickle = setInterval(() => slow.write('a'), 200);
  t.teardown(() => clearInterval(trickle));

  process.kill(started.npm.pid as number, 'SIGTERM');
  await waitFor('the shutdown to begin', () => logLines(started.output()).some((line) => line.msg === 'shutting down'), GRACE_SECONDS * 1000, 50);
  await sleep(PAST_REPEAT_WINDOW_MS);
  t.equal(await exitBy(started, Date.now()), undefined, 'the trickling request still holds the shutdown');
  const secondAt = Date.now();
  process.kill(started.npm.pid as number, 'SIGTERM');
  // Well within what is left of the grace period.
  const deadline = secondAt + 3_000;
  t.same(await exitBy(started, deadline), { code: 1, signal: null }, 'npm exits with the service’s code 1');
  t.same(await leftBehind(started, deadline), { portHeld: false, service: false, postgres: [] }, 'the port is free, the service and every postgres process are gone');
  t.ok(
    logLines(started.output()).some((line) => line.pid === started.servicePid && line.msg === 'second SIGTERM: stopping at once'),
    'the log says why it stopped at once',
  );
});
