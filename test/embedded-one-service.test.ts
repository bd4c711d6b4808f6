import t from 'tap';
import { serverUrl } from './helpers/database.js';
import { call, embeddedData, tokenOf } from './helpers/embedded.js';
import { startServerProcess } from './helpers/process.js';

/** One service per DATA_DIR: the embedded server is its own, never shared. */
if (serverUrl) {
  t.pass('skipped: DATABASE_URL is set, and the embedded server only runs without it');
} else {
  t.test('a second service on the same DATA_DIR stops with a clear message; the first keeps working', async (t) => {
    const { env } = await embeddedData(t);
    const first = await startServerProcess(env);
    t.teardown(() => first.stop('SIGKILL'));
    const firstPid = first.child.pid as number;
    await t.rejects(
      startServerProcess(env),
      new RegExp(`exited with 1[\\s\\S]*Another instance of the service \\(process ${firstPid}\\) is already running on DATA_DIR`),
    );
    const token = await tokenOf(first.baseUrl);
    const created = await call(first.baseUrl, '/API/CreateBucket', { AccessToken: token, BucketName: 'still-fine', OpenToRead: 'true', OpenToUpload: 'false' });
    t.equal(created.Code, 0, 'the first service still reads and writes its database');
  });
}
