import t from 'tap';
import { loadConfig } from '../src/config.js';
import { prepareDatabase } from '../src/services/startup.js';
import { migrateToLatest } from '../db/migrate.js';
import { createTestDatabase } from './helpers/database.js';
import { postForm, startService } from './helpers/service.js';

const ADMIN_KEY = 'admin-key-for-tests-0123456789';

t.test('BOOTSTRAP_APPS creates the apps once and keeps their secrets current', async (t) => {
  const service = await startService(t, { env: { BOOTSTRAP_APPS: 'boot-one:first-secret-0123456789,boot-two:second-secret-0123456789' } });
  t.equal(await service.token('boot-one', 'first-secret-0123456789').then(Boolean), true);
  t.equal(await service.token('boot-two', 'second-secret-0123456789').then(Boolean), true);

  // A second instance starting with a changed secret: still one row, the new secret works.
  await startService(t, { env: { BOOTSTRAP_APPS: 'boot-one:rotated-secret-0123456789' } });
  const rows = await service.app.db.selectFrom('apps').select('app_id').where('app_id', '=', 'boot-one').execute();
  t.equal(rows.length, 1);
  const old = await postForm(service.app, '/API/AccessToken', { AppId: 'boot-one', AppSecret: 'first-secret-0123456789' });
  t.equal(old.json().Code, -1, 'the old secret no longer works');
  t.ok(await service.token('boot-one', 'rotated-secret-0123456789'));
});

t.test('the first start on an empty database creates one app, once', async (t) => {
  const database = await createTestDatabase();
  t.teardown(() => database.drop());
  const config = loadConfig({ DATA_DIR: t.testdirName });

  const first = await prepareDatabase(database.handle.db, config);
  t.ok(first, 'credentials are returned on the first start');
  t.match(first?.appId, /^[A-Za-z0-9_-]{22}$/);
  t.ok((first?.appSecret.length ?? 0) >= 43, 'the secret carries at least 256 bits');
  const stored = await database.handle.db.selectFrom('apps').selectAll().execute();
  t.equal(stored.length, 1);
  t.not(stored[0].secret_hash, first?.appSecret, 'only a hash is stored');
  t.notMatch(JSON.stringify(stored), first?.appSecret ?? '-');

  t.equal(await prepareDatabase(database.handle.db, config), undefined, 'a restart prints nothing');
  await database.handle.db.deleteFrom('apps').execute();
  t.equal(await prepareDatabase(database.handle.db, config), undefined, 'not even after the app was deleted');
});

t.test('no first-start app when apps are provisioned another way', async (t) => {
  for (const env of [{ BOOTSTRAP_APPS: 'configured:configured-secret-0123' }, { ADMIN_KEY }]) {
    const database = await createTestDatabase();
    t.teardown(() => database.drop());
    t.equal(await prepareDatabase(database.handle.db, loadConfig({ DATA_DIR: t.testdirName, ...env })), undefined);
    const apps = await database.handle.db.selectFrom('apps').select('app_id').execute();
    t.same(apps.map((a) => a.app_id), 'BOOTSTRAP_APPS' in env ? ['configured'] : []);
  }
});

t.test('migrations can run again and from several starts at once', async (t) => {
  const database = await createTestDatabase();
  t.teardown(() => database.drop());
  await Promise.all([migrateToLatest(database.handle.db as never), migrateToLatest(database.handle.db as never)]);
  await migrateToLatest(database.handle.db as never);
  const tables = await database.handle.db.introspection.getTables();
  t.same(
    tables.map((table) => table.name).filter((name) => !name.startsWith('kysely_')).sort(),
    ['access_tokens', 'apps', 'bucket_file_counts', 'buckets', 'download_secrets', 'files', 'image_variants', 'instance_leases', 'resumable_uploads', 'service_state'],
  );
});

t.test('without ADMIN_KEY the admin routes do not exist', async (t) => {
  const service = await startService(t);
  const response = await service.app.inject({ method: 'POST', url: '/Admin/CreateApp', headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  t.equal(response.statusCode, 404);
  t.equal(response.json().Code, -1);
});

t.test('the admin key creates apps that can get tokens', async (t) => {
  const service = await startService(t, { env: { ADMIN_KEY } });
  const countApps = async () => (await service.app.db.selectFrom('apps').select('app_id').execute()).length;
  const before = await countApps();
  for (const authorization of [undefined, 'Bearer wrong-key-0123456789abcdef', `Basic ${ADMIN_KEY}`, `Bearer ${ADMIN_KEY}x`]) {
    const refused = await service.app.inject({ method: 'POST', url: '/Admin/CreateApp', headers: authorization ? { authorization } : {} });
    t.equal(refused.statusCode, 401, String(authorization));
    t.same(refused.json(), { Code: -1, Message: 'A valid admin key is required.' });
  }
  t.equal(await countApps(), before, 'nothing was created');

  const created = await service.app.inject({ method: 'POST', url: '/admin/createapp', headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  t.equal(created.statusCode, 200);
  const body = created.json();
  t.equal(body.Code, 0);
  t.equal(body.Message, 'Successfully created the app.');
  t.ok(await service.token(body.AppId, body.AppSecret));
});
