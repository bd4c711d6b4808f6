import t from 'tap';
import { createBucket, uniqueBucketName } from './helpers/buckets.js';
import { download } from './helpers/download.js';
import { makePng, uploadBytes } from './helpers/images.js';
import { startService } from './helpers/service.js';

/**
 * CONTRACT sections 16 and 18: renders are heavy work of the app that owns the file. One app's
 * renders beyond the instance's slots wait in that app's own queue, so another app's render takes
 * the next slot that frees; a secret's use taken by a GET that was turned away for want of
 * capacity is given back.
 */

t.test("one app's flood of renders leaves a slot for another app's", async (t) => {
  const service = await startService(t, { env: { IMAGE_CONCURRENCY: '2', IMAGE_QUEUE_LENGTH: '8' } });
  const baseUrl = await service.listen();
  const flooder = await service.newApp();
  const other = await service.newApp();
  const busyBucket = await createBucket(service, flooder.token, { name: uniqueBucketName('flood'), openToRead: true });
  const otherBucket = await createBucket(service, other.token, { name: uniqueBucketName('calm'), openToRead: true });
  const big = await makePng({ width: 2000, height: 2000, fill: 'noise' });
  const { path: floodPath } = await uploadBytes(service, flooder.token, busyBucket, 'big.png', big);
  const { path: otherPath } = await uploadBytes(service, other.token, otherBucket, 'small.png', await makePng({ width: 400, height: 400, fill: 'noise' }));

  const order: string[] = [];
  const flood = [100, 101, 102, 103, 104, 105].map((w) => download(baseUrl, `${floodPath}?w=${w}`).then((answer) => (order.push(`flood ${answer.status}`), answer)));
  const renders = async () => Number(/filestore_admission_running\{work="images"\} (\d+)/.exec((await service.app.inject('/metrics')).body)?.[1] ?? 0);
  let most = 0;
  for (let i = 0; i < 400 && most < 2; i++) {
    most = Math.max(most, await renders());
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  t.equal(most, 2, 'an app alone renders in every slot of the instance');
  const calm = download(baseUrl, `${otherPath}?w=50`).then((answer) => (order.push(`other ${answer.status}`), answer));
  const [answers, otherAnswer] = await Promise.all([Promise.all(flood), calm]);
  t.equal(otherAnswer.status, 200, "the other app's render is made");
  t.ok(order.indexOf('other 200') < order.length - 1, `it does not wait for the whole flood (${order.join(', ')})`);
  t.same(answers.map((answer) => answer.status), Array(6).fill(200), "the flooding app's renders wait their turn and are all made");
  const metrics = (await service.app.inject('/metrics')).body;
  t.match(metrics, /filestore_admission_total\{work="images",outcome="queued"\} [1-9]/, 'renders of the flooding app queued behind its turn');
});

t.test("a secret's use goes back when its GET is turned away for want of capacity", async (t) => {
  const service = await startService(t, { env: { IMAGE_CONCURRENCY: '1', IMAGE_QUEUE_LENGTH: '0' } });
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token, { name: uniqueBucketName('priv'), openToRead: false });
  const openBucket = await createBucket(service, owner.token, { name: uniqueBucketName('pub'), openToRead: true });
  const image = await makePng({ width: 2000, height: 2000, fill: 'noise' });
  const { fileKey } = await uploadBytes(service, owner.token, bucketId, 'private.png', image);
  const { path: openPath } = await uploadBytes(service, owner.token, openBucket, 'public.png', image);
  const generate = await service.app.inject(`/Secret/Generate?AccessToken=${owner.token}&Id=${fileKey}&MaxUseTimes=1`);
  const secret = generate.json().Value as string;
  const uses = async () => (await service.app.db.selectFrom('download_secrets').select('uses_left').executeTakeFirstOrThrow()).uses_left;

  // One render holds the only slot; the secret's GET meanwhile finds no room.
  const holding = download(baseUrl, `${openPath}?w=300`);
  const running = async () => /filestore_admission_running\{work="images"\} 1/.test((await service.app.inject('/metrics')).body);
  for (let i = 0; i < 200 && !(await running()); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  const refused = await download(baseUrl, `/Download/FromSecret?sec=${encodeURIComponent(secret)}&w=200`);
  await holding;
  t.equal(refused.status, 503, 'turned away while the slot is taken');
  t.equal(await uses(), 1, 'the use is given back');
  const served = await download(baseUrl, `/Download/FromSecret?sec=${encodeURIComponent(secret)}&w=200`);
  t.equal(served.status, 200, 'asked again, it is served');
  t.equal(await uses(), 0, 'and that GET used it');
});
