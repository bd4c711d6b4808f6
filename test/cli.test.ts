import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { FileStore } from '../packages/client/src/node.js';
import { buildPackages, cliHome, runCli, type CliResult } from './helpers/cli.js';
import { uniqueBucketName } from './helpers/buckets.js';
import { startService } from './helpers/service.js';

/** Every command of `filestore`, run as a user runs it (the built command, in a pipe: no terminal), against the service. */

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const parsed = <T>(result: CliResult): T => JSON.parse(result.stdout) as T;

t.test('filestore', async (t) => {
  await buildPackages();
  const service = await startService(t);
  const url = await service.listen();
  const app = await service.newApp();
  const sdk = new FileStore({ url, appId: app.appId, appSecret: app.appSecret });
  const home = await cliHome(t);
  const work = path.join(home.HOME, 'work');
  await mkdir(work);
  const filestore = (args: string[], options: { input?: string; env?: Record<string, string> } = {}) => runCli(args, { ...home, ...options.env }, { input: options.input, cwd: work });

  await t.test('login keeps the credentials in a file only its owner reads', async (t) => {
    const notYet = await filestore(['buckets']);
    t.equal(notYet.status, 2, 'not logged in is bad usage');
    t.match(notYet.stderr, /^filestore: Not logged in: run `filestore login URL APPID`/);

    const wrong = await filestore(['login', url, app.appId], { input: 'not-the-secret\n' });
    t.equal(wrong.status, 1);
    t.equal(wrong.stderr, 'filestore: The AppId and AppSecret do not match any app.\n');
    const badUrl = await filestore(['login', 'files.example.com', app.appId], { input: `${app.appSecret}\n` });
    t.equal(badUrl.status, 2);

    const done = await filestore(['login', url, app.appId], { input: `${app.appSecret}\n` });
    t.equal(done.status, 0, done.stderr);
    const config = path.join(home.XDG_CONFIG_HOME, 'filestore', 'config.json');
    t.equal(done.stdout, `Logged in to ${url}/ as ${app.appId}. Saved in ${config}.\n`);
    t.equal((await stat(config)).mode & 0o777, 0o600, 'the config file is 0600');
    t.equal((await stat(path.dirname(config))).mode & 0o777, 0o700, 'in a folder of 0700');
    t.same(JSON.parse(await readFile(config, 'utf8')), { url: `${url}/`, appId: app.appId, appSecret: app.appSecret });
    t.notMatch(done.stdout + done.stderr, app.appSecret, 'the secret is not printed');
  });

  const bucket = uniqueBucketName('cli');
  await t.test('bucket create, buckets, bucket edit', async (t) => {
    const created = await filestore(['bucket', 'create', bucket, '--public-read', '--json']);
    t.equal(created.status, 0, created.stderr);
    const { BucketId } = parsed<{ BucketId: number }>(created);
    t.same(parsed(created), { BucketId, BucketName: bucket, OpenToRead: true, OpenToUpload: false });
    t.match(await sdk.viewBucketDetail(BucketId), { BucketName: bucket, OpenToRead: true, OpenToUpload: false });

    const taken = await filestore(['bucket', 'create', bucket]);
    t.same([taken.status, taken.stdout, taken.stderr], [1, '', 'filestore: There is one bucket already called that name!\n']);
    const invalid = await filestore(['bucket', 'create', 'abc']);
    t.same([invalid.status, invalid.stderr], [1, 'filestore: Your input contains several errors!\n  - The field BucketName must be 5 to 25 characters long.\n'], 'the Message and each Item');
    const invalidJson = await filestore(['bucket', 'create', 'abc', '--json']);
    t.same(JSON.parse(invalidJson.stderr), { Code: -10, Message: 'Your input contains several errors!', Items: ['The field BucketName must be 5 to 25 characters long.'] });

    const listed = await filestore(['buckets']);
    t.equal(listed.status, 0);
    t.match(listed.stdout, new RegExp(`^ID +READ +UPLOAD +FILES +NAME\\n${BucketId} +yes +no +0 +${bucket}\\n$`));
    t.same(parsed<Array<{ BucketName: string }>>(await filestore(['buckets', '--json'])).map((b) => b.BucketName), [bucket]);

    const edited = await filestore(['bucket', 'edit', bucket, '--public-upload', '--public-read=false']);
    t.same([edited.status, edited.stdout], [0, `Bucket ${bucket}: open to read no, open to upload yes.\n`]);
    t.match(await sdk.viewBucketDetail(BucketId), { BucketName: bucket, OpenToRead: false, OpenToUpload: true });
    const nothing = await filestore(['bucket', 'edit', bucket]);
    t.equal(nothing.status, 2, 'an edit that changes nothing is bad usage');
    const badBool = await filestore(['bucket', 'edit', bucket, '--public-read=maybe']);
    t.equal(badBool.status, 2);
    // Back to open, for the downloads below.
    t.equal((await filestore(['bucket', 'edit', bucket, '--public-read=true'])).status, 0);
  });

  const files = { 'notes.txt': Buffer.from('Wind over the harbour.\n'), 'photo.jpg': randomBytes(300_000), 'video.bin': randomBytes(9 * 1024 * 1024 + 5) };
  const keys: Record<string, number> = {};
  await t.test('upload and ls; in a pipe there is no progress, only the results', async (t) => {
    for (const [name, bytes] of Object.entries(files)) await writeFile(path.join(work, name), bytes);
    const uploaded = await filestore(['upload', bucket, ...Object.keys(files), '--days', '7', '--json']);
    t.equal(uploaded.status, 0, uploaded.stderr);
    t.equal(uploaded.stderr, '', 'nothing on stderr: progress only goes to a terminal');
    const result = parsed<{ Uploaded: Array<{ File: string; FileKey: number; Size: number }>; Failed: unknown[] }>(uploaded);
    t.same(result.Failed, []);
    t.same(result.Uploaded.map((u) => [u.File, u.Size]).sort(), Object.entries(files).map(([name, bytes]) => [name, bytes.length]).sort());
    for (const entry of result.Uploaded) keys[entry.File] = entry.FileKey;
    for (const [name, bytes] of Object.entries(files)) t.equal(sha256(await (await sdk.downloadFromKey(keys[name]!)).bytes()), sha256(bytes), `${name} whole`);

    const again = await filestore(['upload', bucket, 'notes.txt']);
    t.same([again.status, again.stdout, again.stderr], [1, '', 'filestore: notes.txt: There already exists a file with that name.\n']);
    const folder = await filestore(['upload', bucket, '.']);
    t.same([folder.status, folder.stderr], [2, 'filestore: . is a folder: add --recursive to upload its files.\n']);
    const missing = await filestore(['upload', bucket, 'nowhere.txt']);
    t.equal(missing.status, 2);

    const ls = await filestore(['ls', bucket]);
    t.equal(ls.status, 0);
    const lines = ls.stdout.trim().split('\n');
    t.match(lines[0], /^FILEKEY +SIZE +UPLOADED +EXPIRES +DOWNLOADS +NAME$/);
    t.match(lines.find((text) => text.endsWith('photo.jpg')), /^\d+ +293 KiB +\d{4}-\d\d-\d\d \d\d:\d\d +\d{4}-\d\d-\d\d \d\d:\d\d +1 +photo\.jpg$/);
    const listing = parsed<Array<{ FileKey: number }>>(await filestore(['ls', bucket, '--json']));
    t.same(listing, (await sdk.viewAllFiles((await sdk.viewMyBuckets()).Buckets[0]!.BucketId)).AllFiles, 'ls --json is the listing');
  });

  await t.test('info and share', async (t) => {
    const key = keys['notes.txt']!;
    const info = await filestore(['info', String(key)]);
    t.match(info.stdout, new RegExp(`^FileKey: +${key}\\nName: +notes\\.txt\\nSize: +23 B \\(23 bytes\\)\\n`));
    t.same(parsed(await filestore(['info', String(key), '--json'])), (await sdk.viewOneFile(key)).File);
    const unknown = await filestore(['info', '999999999']);
    t.same([unknown.status, unknown.stderr], [1, 'filestore: Could not find that file.\n']);
    t.equal((await filestore(['info', 'twelve'])).status, 2, 'not a FileKey');

    const shared = await filestore(['share', String(key), '--uses', '2']);
    t.equal(shared.status, 0);
    const link = shared.stdout.trim();
    t.match(link, new RegExp(`^${url}/Download/FromSecret\\?sec=`));
    for (let use = 0; use < 2; use++) t.equal(await (await fetch(link)).text(), files['notes.txt'].toString());
    t.equal((await fetch(link)).status, 404, 'the link allows the uses asked for');
    t.equal((await filestore(['share', String(key), '--uses', '0'])).status, 2);
  });

  await t.test('download: by key, by BUCKET/NAME, into a folder, and continuing a partial file', async (t) => {
    const photo = files['photo.jpg'];
    const byKey = await filestore(['download', String(keys['photo.jpg']), '-o', 'copy.jpg', '--json']);
    t.equal(byKey.status, 0, byKey.stderr);
    t.match(parsed(byKey), { FileKey: keys['photo.jpg'], Path: 'copy.jpg', Size: photo.length, Resumed: 0 });
    t.equal(sha256(await readFile(path.join(work, 'copy.jpg'))), sha256(photo));
    t.equal((await filestore(['download', String(keys['photo.jpg']), '-o', 'copy.jpg'])).status, 2, 'an existing file is not replaced without --force');

    await mkdir(path.join(work, 'into'));
    const byName = await filestore(['download', `${bucket}/video.bin`, '-o', 'into']);
    t.equal(byName.status, 0, byName.stderr);
    t.equal(byName.stdout, `Downloaded video.bin to into/video.bin (9.0 MiB).\n`);
    t.equal(byName.stderr, '');
    t.equal(sha256(await readFile(path.join(work, 'into', 'video.bin'))), sha256(files['video.bin']));

    // A run cut short left the first 100 000 bytes: the next one asks only for the rest.
    const key = keys['photo.jpg']!;
    await writeFile(path.join(work, `resumed.jpg.${key}.part`), photo.subarray(0, 100_000));
    const countBefore = (await sdk.viewOneFile(key)).File.DownloadTimes;
    const resumed = await filestore(['download', String(key), '-o', 'resumed.jpg']);
    t.equal(resumed.status, 0, resumed.stderr);
    t.equal(resumed.stdout, 'Downloaded photo.jpg to resumed.jpg (293 KiB, resumed at 98 KiB).\n');
    t.equal(sha256(await readFile(path.join(work, 'resumed.jpg'))), sha256(photo), 'the file is whole');
    t.equal((await sdk.viewOneFile(key)).File.DownloadTimes, countBefore, 'a range from the middle: the service sent only the rest (it counts no download)');

    const toStdout = await runCli(['download', String(keys['notes.txt']), '-o', '-'], home, { cwd: work });
    t.equal(toStdout.stdout, files['notes.txt'].toString(), '-o - writes the bytes to stdout');
  });

  await t.test('rm, and bucket rm', async (t) => {
    const removed = await filestore(['rm', String(keys['notes.txt']), '999999999']);
    t.same([removed.status, removed.stdout, removed.stderr], [1, `Deleted ${keys['notes.txt']}.\n`, 'filestore: 999999999: Could not find that file.\n']);
    const asJson = await filestore(['rm', String(keys['photo.jpg']), '--json']);
    t.same(parsed(asJson), { Deleted: [keys['photo.jpg']], Failed: [] });

    const unasked = await filestore(['bucket', 'rm', bucket]);
    t.same([unasked.status, unasked.stderr], [2, `filestore: Deleting ${bucket} deletes its 1 file(s) for good: add --yes.\n`], 'no terminal to ask on: --yes is needed');
    const gone = await filestore(['bucket', 'rm', bucket, '--yes']);
    t.same([gone.status, gone.stdout], [0, `Deleted bucket ${bucket} and its 1 file(s).\n`]);
    t.same((await sdk.viewMyBuckets()).Buckets, []);
    const unknown = await filestore(['ls', bucket]);
    t.same([unknown.status, unknown.stderr], [1, `filestore: You have no bucket called ${bucket}.\n`]);
  });

  await t.test('every command has --help; usage errors exit 2', async (t) => {
    for (const command of [[], ['login'], ['buckets'], ['bucket'], ['bucket', 'create'], ['bucket', 'edit'], ['bucket', 'rm'], ['ls'], ['upload'], ['download'], ['share'], ['rm'], ['info']]) {
      const help = await filestore([...command, '--help']);
      t.equal(help.status, 0, `${command.join(' ')} --help`);
      t.match(help.stdout, new RegExp(`^Usage: filestore${command.length ? ` ${command.join(' ')}` : ''} `), `${command.join(' ') || 'filestore'}: its usage`);
    }
    t.equal((await filestore(['nonsense'])).status, 2);
    t.equal((await filestore(['upload', 'x', 'y', '--days', '0'])).status, 2);
    t.equal((await filestore(['upload', 'x', 'y', '--concurrency', 'lots'])).status, 2);
  });

  await t.test('FILESTORE_URL, FILESTORE_APP_ID and FILESTORE_APP_SECRET override the saved login', async (t) => {
    const other = await service.newApp();
    const elsewhere = await cliHome(t);
    const env = { ...elsewhere, FILESTORE_URL: url, FILESTORE_APP_ID: other.appId, FILESTORE_APP_SECRET: other.appSecret };
    const name = uniqueBucketName('env');
    t.equal((await runCli(['bucket', 'create', name], env)).status, 0);
    t.same(parsed<Array<{ BucketName: string; BelongingAppId: string }>>(await runCli(['buckets', '--json'], env)).map((b) => [b.BucketName, b.BelongingAppId]), [[name, other.appId]]);
  });
});
