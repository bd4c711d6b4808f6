import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { FileStore } from '../packages/client/src/node.js';
import { uniqueBucketName } from './helpers/buckets.js';
import { buildPackages, CLI, cliHome, finished, runCli, spawnCli } from './helpers/cli.js';
import { waitFor } from './helpers/process.js';
import { startService } from './helpers/service.js';

/** `filestore upload` at size: 200 MiB four files at a time, a run stopped with Ctrl-C and run again, and its bars on a terminal. */

const MiB = 1024 * 1024;
const run = promisify(execFile);

t.test('filestore upload', async (t) => {
  await buildPackages();
  const service = await startService(t);
  const url = await service.listen();
  const app = await service.newApp();
  const sdk = new FileStore({ url, appId: app.appId, appSecret: app.appSecret });
  const bucket = uniqueBucketName('cli-big');
  const { BucketId } = await sdk.createBucket(bucket, { openToRead: true });
  const home = await cliHome(t);
  const env = { ...home, FILESTORE_URL: url, FILESTORE_APP_ID: app.appId, FILESTORE_APP_SECRET: app.appSecret };
  const metric = async (name: string) => Number(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\d+)`, 'm').exec(await (await fetch(`${url}/metrics`)).text())?.[1] ?? 0);
  const sha256OfDownload = async (fileKey: number) => {
    const hash = createHash('sha256');
    for await (const chunk of (await sdk.downloadFromKey(fileKey)).body!) hash.update(chunk);
    return hash.digest('hex');
  };

  await t.test('200 MiB in a folder, four files at a time', async (t) => {
    const folder = path.join(home.HOME, 'footage');
    await mkdir(path.join(folder, 'day-2'), { recursive: true });
    const expected = new Map<string, string>();
    for (let i = 0; i < 8; i++) {
      const bytes = randomBytes(25 * MiB);
      const name = `clip-${i}.bin`;
      await writeFile(path.join(folder, i < 4 ? '' : 'day-2', name), bytes);
      expected.set(name, createHash('sha256').update(bytes).digest('hex'));
    }
    const started = Date.now();
    const result = await runCli(['upload', bucket, folder, '--recursive', '--concurrency', '4', '--days', '2', '--json'], env);
    t.comment(`200 MiB uploaded by the command in ${Date.now() - started} ms`);
    t.equal(result.status, 0, result.stderr);
    t.equal(result.stderr, '', 'no progress in a pipe');
    const { Uploaded, Failed } = JSON.parse(result.stdout) as { Uploaded: Array<{ File: string; FileKey: number; Size: number }>; Failed: unknown[] };
    t.same(Failed, []);
    t.equal(Uploaded.length, 8);
    for (const entry of Uploaded) t.equal(await sha256OfDownload(entry.FileKey), expected.get(path.basename(entry.File)), `${path.basename(entry.File)} whole`);
    t.equal((await sdk.viewBucketDetail(BucketId)).FileCount, 8);
  });

  await t.test('stopped with Ctrl-C, then run again: it goes on where it stopped', async (t) => {
    const size = 96 * MiB;
    const file = path.join(home.HOME, 'long recording.wav');
    const bytes = randomBytes(size);
    await writeFile(file, bytes);
    const created = await metric('filestore_resumable_uploads_total{event="created"}');
    const received = await metric('filestore_resumable_received_bytes_total');

    const first = spawnCli(['upload', bucket, file], env);
    const firstRun = finished(first);
    // Held still (SIGSTOP) while the service is asked how far the upload is, so it cannot finish
    // meanwhile; once part of it is there, Ctrl-C (SIGINT) waits for the process to go on.
    const statePath = path.join(home.XDG_STATE_HOME, 'filestore', 'uploads.json');
    const kept = async () => Object.values((JSON.parse(await readFile(statePath, 'utf8').catch(() => '{}')) as Record<string, { url: string }>))[0]?.url;
    await waitFor('the upload URL to be kept', async () => (await kept()) !== undefined, 30_000, 5);
    const uploadUrl = (await kept())!;
    let offset = 0;
    try {
      await waitFor(
        'part of the file to be there',
        async () => {
          first.kill('SIGSTOP');
          offset = (await sdk.resumableOffset(uploadUrl))?.offset ?? 0;
          if (offset > 0) first.kill('SIGINT');
          first.kill('SIGCONT');
          return offset > 0;
        },
        30_000,
        5,
      );
    } finally {
      first.kill('SIGCONT');
    }
    const stopped = await firstRun;
    t.equal(stopped.status, 130, 'interrupted');
    t.equal(stopped.stderr, '\nInterrupted. Run the same command again to resume.\n');
    t.ok(offset < size, `stopped partway (${offset} of ${size} bytes)`);
    t.notOk((await sdk.viewAllFiles(BucketId)).AllFiles.some((f) => f.RealFileName === 'long recording.wav'), 'no file yet');

    const second = await runCli(['upload', bucket, file, '--json'], env);
    t.equal(second.status, 0, second.stderr);
    const [entry] = (JSON.parse(second.stdout) as { Uploaded: Array<{ FileKey: number }> }).Uploaded;
    t.equal(await sha256OfDownload(entry!.FileKey), createHash('sha256').update(bytes).digest('hex'), 'the file is whole');
    t.equal((await metric('filestore_resumable_uploads_total{event="created"}')) - created, 1, 'one upload, continued: not a second one');
    const sent = (await metric('filestore_resumable_received_bytes_total')) - received;
    t.ok(sent < size + 16 * MiB, `the second run sent the rest, not all again (${sent} bytes received for ${size})`);
    t.same(JSON.parse(await readFile(statePath, 'utf8')), {}, 'and forgot the finished upload');
  });

  await t.test('on a terminal: a bar per file and one for the whole', { skip: existsSync('/usr/bin/script') ? false : 'needs script(1) for a pseudo-terminal' }, async (t) => {
    const folder = path.join(home.HOME, 'shown');
    await mkdir(folder);
    for (const name of ['one.bin', 'two.bin']) await writeFile(path.join(folder, name), randomBytes(12 * MiB));
    // script(1) runs the command on a pseudo-terminal and keeps what it showed.
    const command = [process.execPath, CLI, 'upload', bucket, path.join(folder, 'one.bin'), path.join(folder, 'two.bin')].map((part) => `'${part}'`).join(' ');
    const { stdout } = await run('script', ['-qfec', command, '/dev/null'], { env: { PATH: process.env.PATH ?? '', ...env, COLUMNS: '120', TERM: 'xterm' }, maxBuffer: 64 * MiB });
    const screen = stdout.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');
    const bar = (name: string) => new RegExp(`[█░]{24} +\\d+% +[\\d.]+ [KM]?i?B of ${name === '(all files)' ? '24' : '12'} MiB +${name.replace(/[().]/g, '\\$&')}`);
    t.match(screen, bar('one.bin'), 'a bar for one.bin');
    t.match(screen, bar('two.bin'), 'and for two.bin');
    t.match(screen, bar('(all files)'), 'and one for the whole');
    t.match(screen, /Uploaded .*one\.bin as \d+ \(12 MiB\)/, 'each result on a line of its own');
    t.match(screen, /2 of 2 file\(s\) uploaded, 24 MiB\.\s*$/, 'the bars gone at the end: the results stay');
  });
});
