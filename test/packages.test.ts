import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { uniqueBucketName } from './helpers/buckets.js';
import { buildPackages } from './helpers/cli.js';
import { startService } from './helpers/service.js';

/** `npm pack` of the SDK and the CLI, installed in an empty folder as a user installs them, and used there. */

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const run = promisify(execFile);

t.test('the packed SDK and CLI install and run in an empty folder', async (t) => {
  const service = await startService(t);
  const url = await service.listen();
  const app = await service.newApp();
  const folder = await mkdtemp(path.join(tmpdir(), 'filestore-packed-'));
  t.teardown(() => rm(folder, { recursive: true, force: true }));

  // Built as prepack would (once per test run, shared with the CLI's tests); the tarballs hold what `files` lists.
  await buildPackages();
  await run('npm', ['pack', '--ignore-scripts', '--pack-destination', folder, '-w', 'packages/client', '-w', 'packages/cli'], { cwd: ROOT });
  const tarballs = (await readdir(folder)).filter((name) => name.endsWith('.tgz')).sort();
  t.same(tarballs, ['filestore-cli-0.1.0.tgz', 'filestore-client-0.1.0.tgz']);
  for (const tarball of tarballs) {
    const { stdout } = await run('tar', ['-tzf', path.join(folder, tarball)]);
    const entries = stdout.trim().split('\n');
    t.ok(entries.every((entry) => /^package\/(dist\/|package\.json$|README\.md$)/.test(entry)), `${tarball} holds dist, package.json and its README only`);
    t.ok(entries.includes('package/README.md'), `${tarball} has its README`);
  }

  const project = path.join(folder, 'app');
  await mkdir(project);
  await writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'tries-filestore', private: true, type: 'module' }));
  // From the cache npm ci filled: the CLI's dependencies are in the lock file.
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...tarballs.map((name) => path.join(folder, name))], { cwd: project });

  await t.test('the SDK, imported by an ES module', async (t) => {
    const bucket = uniqueBucketName('packed');
    await writeFile(
      path.join(project, 'try.mjs'),
      `import { FileStore, FileStoreError } from '@filestore/client';
const client = new FileStore({ url: process.env.URL, appId: process.env.APP_ID, appSecret: process.env.APP_SECRET });
const { BucketId } = await client.createBucket(process.env.BUCKET, { openToRead: true });
const { FileKey } = await client.uploadFile(BucketId, new TextEncoder().encode('packed and installed'), { aliveDays: 1, fileName: 'hello.txt' });
const text = await (await client.downloadFromKey(FileKey)).text();
const refused = await client.createBucket(process.env.BUCKET).catch((error) => error instanceof FileStoreError && error.message);
console.log(JSON.stringify({ BucketId, text, refused }));
`,
    );
    const { stdout } = await run(process.execPath, ['try.mjs'], { cwd: project, env: { PATH: process.env.PATH, URL: url, APP_ID: app.appId, APP_SECRET: app.appSecret, BUCKET: bucket } });
    t.match(JSON.parse(stdout), { BucketId: Number, text: 'packed and installed', refused: 'There is one bucket already called that name!' });
  });

  await t.test('its types, for a TypeScript user', async (t) => {
    await writeFile(
      path.join(project, 'try.ts'),
      `import { FileStore, type StoredFile } from '@filestore/client';
const client = new FileStore({ url: 'http://localhost:3000', appId: 'a', appSecret: 's' });
export async function size(key: number): Promise<number> {
  const file: StoredFile = (await client.viewOneFile(key)).File;
  // @ts-expect-error: the results are typed to the wire's fields
  void file.Size;
  return file.JFileSize;
}
`,
    );
    await writeFile(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', lib: ['ES2023', 'DOM'], types: [], strict: true, noEmit: true }, files: ['try.ts'] }),
    );
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const checked = await run(process.execPath, [tsc, '-p', project]).then(
      () => 'ok',
      (error: { stdout: string }) => error.stdout,
    );
    t.equal(checked, 'ok', 'type-checks against the installed declarations');
  });

  await t.test('the filestore command', async (t) => {
    const filestore = path.join(project, 'node_modules', '.bin', 'filestore');
    const env = { PATH: process.env.PATH ?? '', HOME: project, FILESTORE_URL: url, FILESTORE_APP_ID: app.appId, FILESTORE_APP_SECRET: app.appSecret };
    t.equal((await run(filestore, ['--version'], { env })).stdout, '0.1.0\n');
    const { stdout } = await run(filestore, ['buckets', '--json'], { env });
    t.equal((JSON.parse(stdout) as unknown[]).length, 1, 'it lists the bucket the SDK made');
  });
});
