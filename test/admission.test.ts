import t from 'tap';
import { Admission, type AdmissionOutcome, type Release } from '../src/services/admission.js';

const BUSY = { code: -1, statusCode: 429, message: 'This app has too many requests in progress on this instance; try again in 2 seconds.', headers: { 'Retry-After': '2' } };

function admission(concurrency: number, queue: number, queueTimeoutMs = 60_000) {
  const outcomes: AdmissionOutcome[] = [];
  return { admission: new Admission({ concurrency, queue, queueTimeoutMs }, (outcome) => outcomes.push(outcome)), outcomes };
}

/** Whether a promise has settled by the time the microtasks and immediates queued now have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

t.test('an app runs up to its concurrency at once; the next ones wait their turn in order, other apps not at all', async (t) => {
  const { admission: turns, outcomes } = admission(2, 10);
  const first = await turns.admit('a');
  const second = await turns.admit('a');
  const order: number[] = [];
  const third = turns.admit('a').then((release) => (order.push(3), release));
  const fourth = turns.admit('a').then((release) => (order.push(4), release));
  t.notOk(await settled(third), 'the third waits');
  t.same(turns.load(), { running: 2, waiting: 2 });
  const other = await turns.admit('b');
  t.same(turns.load(), { running: 3, waiting: 2 }, 'another app is admitted at once');

  first();
  first();
  const thirdRelease = await third;
  t.notOk(await settled(fourth), 'releasing twice gave only one turn');
  second();
  (await fourth)();
  thirdRelease();
  other();
  t.same(order, [3, 4], 'first come, first served');
  t.same(turns.load(), { running: 0, waiting: 0 });
  t.same(outcomes, ['admitted', 'admitted', 'queued', 'queued', 'admitted', 'admitted', 'admitted']);
});

t.test('past its queue an app is refused with 429 and Retry-After', async (t) => {
  const { admission: turns, outcomes } = admission(1, 1);
  const running = await turns.admit('a');
  const waiting = turns.admit('a');
  await t.rejects(turns.admit('a'), BUSY);
  const zero = admission(1, 0);
  await zero.admission.admit('a');
  await t.rejects(zero.admission.admit('a'), BUSY, 'PER_APP_QUEUE=0: no waiting at all');
  running();
  (await waiting)();
  t.same(outcomes, ['admitted', 'queued', 'refused', 'admitted']);
});

t.test('a request that waits too long is refused and leaves the queue', async (t) => {
  const { admission: turns, outcomes } = admission(1, 5, 50);
  const running = await turns.admit('a');
  await t.rejects(turns.admit('a'), BUSY);
  t.same(turns.load(), { running: 1, waiting: 0 });
  running();
  t.same(outcomes, ['admitted', 'queued', 'timed_out']);
});

t.test('a request whose caller goes away leaves the queue at once, and the turn goes to the next', async (t) => {
  const { admission: turns, outcomes } = admission(1, 5);
  const running = await turns.admit('a');
  const caller = new AbortController();
  const leaving = turns.admit('a', caller.signal);
  const next = turns.admit('a');
  caller.abort(new Error('gone'));
  await t.rejects(leaving, { message: 'gone' });
  t.same(turns.load(), { running: 1, waiting: 1 });
  running();
  const release: Release = await next;
  release();
  await t.rejects(turns.admit('a', AbortSignal.abort(new Error('gone before'))), { message: 'gone before' });
  t.same(turns.load(), { running: 0, waiting: 0 });
  t.same(outcomes, ['admitted', 'queued', 'queued', 'abandoned', 'admitted', 'abandoned']);
});
