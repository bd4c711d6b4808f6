import { chmod } from 'node:fs/promises';
import t from 'tap';
import { diskStoreOf, startService } from './helpers/service.js';

t.test('GET / and /health answer without touching the database', async (t) => {
  const service = await startService(t);
  t.same((await service.app.inject({ url: '/' })).json(), {
    Code: 0,
    Message: 'Welcome to the bucket file storage service. The API lives under /API/.',
  });
  t.same((await service.app.inject({ url: '/HEALTH' })).json(), { Code: 0, Message: 'The process is up.' });
});

t.test('/ready turns 503 while shutting down or when storage is not writable', async (t) => {
  const service = await startService(t);
  t.same((await service.app.inject({ url: '/ready' })).json(), { Code: 0, Message: 'Ready.' });

  service.app.lifecycle.shuttingDown = true;
  const closing = await service.app.inject({ url: '/ready' });
  t.equal(closing.statusCode, 503);
  t.same(closing.json(), { Code: -1, Message: 'Not ready: the service is shutting down.' });
  service.app.lifecycle.shuttingDown = false;

  if (process.getuid?.() === 0) {
    t.comment('running as root, which writes through any permission: the unwritable-storage case is not observable');
  } else {
    const { objectsDir } = diskStoreOf(service);
    await chmod(objectsDir, 0o500);
    t.teardown(() => chmod(objectsDir, 0o700));
    const readOnly = await service.app.inject({ url: '/ready' });
    t.equal(readOnly.statusCode, 503);
    t.same(readOnly.json(), { Code: -1, Message: 'Not ready: the storage is not writable.' });
  }
});
