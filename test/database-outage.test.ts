import { readdir } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { connectDatabase } from '../db/connect.js';
import { createBucket } from './helpers/buckets.js';
import { privatePostgresUnavailable, startPrivatePostgres } from './helpers/private-postgres.js';
import { startService } from './helpers/service.js';
import { upload } from './helpers/upload.js';

const UNREACHABLE = { Code: -1, Message: 'The database is unreachable right now; try again shortly.' };

// The service runs on its own PostgreSQL server here, whichever database the rest of the suite
// uses: stopping the shared server would fail other tests. The embedded database cannot go away
// while its process lives, so this case exists only for PostgreSQL.
const unavailable = privatePostgresUnavailable();

t.test('PostgreSQL stopped while the service runs: 503 with the envelope, then recovery', { skip: unavailable }, async (t) => {
  const postgres = await startPrivatePostgres();
  t.teardown(() => postgres.destroy());
  const database = await connectDatabase({ databaseUrl: postgres.url, dataDir: '' });
  t.teardown(() => database.close());
  const service = await startService(t, { database });
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const params = { AccessToken: owner.token, BucketId: bucketId, AliveDays: 1 };
  const before = await upload({ baseUrl, before: params, fileName: 'before.bin', size: 100_000 });
  t.equal(before.body.Code, 0);
  const storedBefore = await readdir(service.config.storageDir, { recursive: true });

  await postgres.stop();
  const view = await fetch(`${baseUrl}/API/ViewOneFile?FileKey=${before.body.FileKey}`);
  t.equal(view.status, 503);
  t.same(await view.json(), UNREACHABLE);
  const list = await fetch(`${baseUrl}/API/ViewMyBuckets?AccessToken=${owner.token}`);
  t.equal(list.status, 503);
  t.same(await list.json(), UNREACHABLE);
  for (const placement of ['query', 'after'] as const) {
    const refused = await upload({ baseUrl, [placement]: params, fileName: `during-${placement}.bin`, size: 2 * 1024 * 1024 });
    t.equal(refused.status, 503, `upload with fields ${placement}`);
    t.same(refused.body, UNREACHABLE);
  }
  t.same(await readdir(service.config.storageDir, { recursive: true }), storedBefore, 'no bytes were left by the refused uploads');
  const ready = await fetch(`${baseUrl}/ready`);
  t.equal(ready.status, 503);
  t.same(await ready.json(), { Code: -1, Message: 'Not ready: the database is unreachable.' });
  t.equal((await fetch(`${baseUrl}/health`)).status, 200, 'the process itself is healthy');

  await postgres.start();
  let recovered = false;
  for (let i = 0; i < 100 && !recovered; i++) {
    recovered = (await fetch(`${baseUrl}/ready`)).status === 200;
    if (!recovered) await sleep(100);
  }
  t.ok(recovered, 'ready again without a restart');
  const after = (await (await fetch(`${baseUrl}/API/ViewOneFile?FileKey=${before.body.FileKey}`)).json()) as { Code: number };
  t.equal(after.Code, 0);
  const again = await upload({ baseUrl, before: params, fileName: 'after.bin', size: 100_000 });
  t.equal(again.body.Code, 0, 'uploads work again');
});
