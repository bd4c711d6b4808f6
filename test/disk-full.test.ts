import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { serverUrl } from './helpers/database.js';
import { serverData, startServerProcess } from './helpers/process.js';
import { onSmallDisk, whyNoSmallDisk } from './helpers/small-disk.js';
import { upload } from './helpers/upload.js';

const MiB = 1024 * 1024;
const APP = { id: 'disk-full-app', secret: 'disk-full-secret-0123456789' };
/**
 * The server runs inside `unshare -rm`, as uid 0 of a user namespace that maps no other uid: the
 * embedded PostgreSQL server refuses uid 0 and has no other user to run as there. A filling storage
 * volume does not depend on the database, so this runs on the PostgreSQL suite only.
 */
const whyNot = whyNoSmallDisk() || (serverUrl ? false : 'runs with DATABASE_URL only: the embedded server cannot start inside the small disk\'s user namespace');

t.test('a disk that fills during an upload: 507, no partial file, the service keeps serving', { skip: whyNot }, async (t) => {
  const data = await serverData(t, 'disk-full');
  const storageDir = await mkdtemp(path.join(tmpdir(), 'filestore-small-disk-'));
  t.teardown(() => rm(storageDir, { recursive: true, force: true }));

  // Only the server sees the 8 MiB disk mounted on its STORAGE_DIR; the database stays on the real one.
  const server = await startServerProcess(
    { ...data.env, STORAGE_DIR: storageDir, MIN_FREE_DISK_BYTES: '0', BOOTSTRAP_APPS: `${APP.id}:${APP.secret}` },
    onSmallDisk(storageDir, '8m'),
  );
  t.teardown(() => server.stop());
  // The server's own view of its storage folder, mounts included.
  const seenByServer = (sub: string) => readdir(path.join(`/proc/${server.child.pid}/root`, storageDir, sub), { recursive: true });

  const form = (fields: Record<string, string>) => ({ method: 'POST', body: new URLSearchParams(fields) });
  const token = ((await (await fetch(`${server.baseUrl}/API/AccessToken`, form({ AppId: APP.id, AppSecret: APP.secret }))).json()) as { AccessToken: string }).AccessToken;
  const created = (await (await fetch(`${server.baseUrl}/API/CreateBucket`, form({ AccessToken: token, BucketName: `disk-full-${process.pid}`, OpenToRead: 'true', OpenToUpload: 'false' }))).json()) as { BucketId: number };
  const params = { AccessToken: token, BucketId: created.BucketId, AliveDays: 1 };

  const small = await upload({ baseUrl: server.baseUrl, before: params, fileName: 'fits.bin', size: MiB });
  t.equal(small.body.Code, 0);
  const objectsBefore = await seenByServer('objects');

  const big = await upload({ baseUrl: server.baseUrl, before: params, fileName: 'too-big.bin', size: 16 * MiB });
  t.equal(big.status, 507);
  t.same(big.body, { Code: -1, Message: 'The storage is full; the file was not stored.' });
  t.same(await seenByServer('tmp'), [], 'no partial file is left');
  t.same(await seenByServer('objects'), objectsBefore, 'nothing new was stored');
  const listed = (await (await fetch(`${server.baseUrl}/API/ViewAllFiles?AccessToken=${token}&BucketId=${created.BucketId}`)).json()) as { AllFiles: Array<{ RealFileName: string }> };
  t.same(listed.AllFiles.map((f) => f.RealFileName), ['fits.bin'], 'no row for the refused file');

  const after = await upload({ baseUrl: server.baseUrl, before: params, fileName: 'after.bin', size: MiB });
  t.equal(after.body.Code, 0, 'the space is free again and uploads work');
});
