import { createServer, type AddressInfo } from 'node:net';
import t from 'tap';
import { FileStore, FileStoreError, type TokenGrant } from '../packages/client/src/node.js';
import { uniqueBucketName } from './helpers/buckets.js';
import { waitFor } from './helpers/process.js';
import { startService } from './helpers/service.js';

/** The SDK across what a real deployment does to it: tokens that die, instances that stop or shed load, callers that give up. */

const EXPIRED = { code: -1, message: 'Invalid or expired AccessToken.' };

/** A port nothing listens on. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** A fetch that records each request and lets a test act on each outcome. */
function recordingFetch(onOutcome: (outcome: Response | Error) => void = () => {}) {
  const log: string[] = [];
  const wrapped: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    log.push(`${init?.method ?? 'GET'} ${url.pathname}`);
    try {
      const response = await fetch(input, init);
      onOutcome(response);
      return response;
    } catch (error) {
      onOutcome(error as Error);
      throw error;
    }
  };
  return { log, fetch: wrapped };
}

t.test('tokens', async (t) => {
  const service = await startService(t, { env: { TOKEN_LIFETIME_SECONDS: '2' } });
  const url = await service.listen();
  const app = await service.newApp();

  await t.test('renewed across DeadTime, so a long-lived client keeps working', async (t) => {
    const grants: TokenGrant[] = [];
    const { log, fetch } = recordingFetch();
    const client = new FileStore({ url, appId: app.appId, appSecret: app.appSecret, fetch, onToken: (grant) => grants.push(grant) });
    await client.createBucket(uniqueBucketName('tokens'));
    t.equal(grants.length, 1);
    const first = grants[0]!;
    // Past the first token's DeadTime: the service no longer takes it.
    await waitFor('the first token to expire', () => Date.now() > Date.parse(first.DeadTime) + 50, 10_000, 50);
    const stale = await (await globalThis.fetch(`${url}/API/ViewMyBuckets`, { headers: { authorization: `Bearer ${first.AccessToken}` } })).json();
    t.match(stale, { Code: -1, Message: EXPIRED.message }, 'the first token is dead');

    const listed = await client.viewMyBuckets();
    t.equal(listed.Buckets.length, 1, 'the client still works');
    t.equal(grants.length, 2, 'with a new token');
    t.not(grants[1]!.AccessToken, first.AccessToken);
    t.ok(Date.parse(grants[1]!.DeadTime) > Date.parse(first.DeadTime));
    t.same(log.filter((line) => line.endsWith('/AccessToken')).length, 2, 'renewed before the call, not after a refusal');
  });

  await t.test('a token the service refuses is replaced once, and the call goes through', async (t) => {
    const { log, fetch } = recordingFetch();
    const client = new FileStore({ url, appId: app.appId, appSecret: app.appSecret, accessToken: 'a-token-from-yesterday', fetch });
    t.equal((await client.viewMyBuckets()).Code, 0);
    t.same(log, ['GET /API/ViewMyBuckets', 'POST /API/AccessToken', 'GET /API/ViewMyBuckets']);
  });

  await t.test('without credentials a dead token is the caller’s error', async (t) => {
    const client = new FileStore({ url, accessToken: 'a-token-from-yesterday' });
    const error = (await client.viewMyBuckets().catch((e: unknown) => e)) as FileStoreError;
    t.match(error, { name: 'FileStoreError', ...EXPIRED, status: 200 });
  });

  await t.test('concurrent calls share one renewal', async (t) => {
    const { log, fetch } = recordingFetch();
    const client = new FileStore({ url, appId: app.appId, appSecret: app.appSecret, fetch });
    await Promise.all(Array.from({ length: 6 }, () => client.viewMyBuckets()));
    t.equal(log.filter((line) => line.endsWith('/AccessToken')).length, 1);
  });

  await t.test('wrong credentials are refused with the service’s Message', async (t) => {
    const client = new FileStore({ url, appId: app.appId, appSecret: 'not-the-secret' });
    const error = (await client.viewMyBuckets().catch((e: unknown) => e)) as FileStoreError;
    t.match(error, { code: -1, message: 'The AppId and AppSecret do not match any app.', status: 200 });
  });
});

t.test('retries', async (t) => {
  const service = await startService(t);
  const url = await service.listen();
  const port = new URL(url).port;
  const app = await service.newApp();
  const quick = { retries: 4, baseDelayMs: 50, maxDelayMs: 5_000 };

  await t.test('a stopped instance: the call waits for it to come back', async (t) => {
    let relistened: Promise<void> | undefined;
    const { log, fetch } = recordingFetch((outcome) => {
      // The first failed connection brings the instance back, as a restart would.
      if (outcome instanceof Error && !relistened) relistened = new Promise((resolve) => service.app.server.listen(Number(port), '127.0.0.1', () => resolve()));
    });
    const stop = async () => {
      relistened = undefined;
      await new Promise<void>((resolve) => service.app.server.close(() => resolve()));
      service.app.server.closeAllConnections();
    };
    // As a new process finds it: no connection open yet, and the instance down.
    const client = new FileStore({ url, accessToken: app.token, fetch, retry: quick });
    await stop();
    // A POST too: a refused connection is one the service never saw.
    t.equal((await client.createBucket(uniqueBucketName('restart'))).Code, 0);
    t.ok(relistened, 'the instance was down when the call began');
    t.same(log, ['POST /API/CreateBucket', 'POST /API/CreateBucket'], 'sent again once it listened');

    // A GET on a connection the stopping instance closed, then refused: sent again until it answers.
    await stop();
    t.equal((await client.viewMyBuckets()).Buckets.length, 1);
    t.ok(relistened);
  });

  await t.test('an instance shutting down (503): sent again until one answers', async (t) => {
    let refusals = 0;
    const { fetch } = recordingFetch((outcome) => {
      if (outcome instanceof Response && outcome.status === 503 && ++refusals === 2) service.app.lifecycle.shuttingDown = false;
    });
    const client = new FileStore({ url, appId: app.appId, appSecret: app.appSecret, fetch, retry: quick });
    await client.token();
    service.app.lifecycle.shuttingDown = true;
    const listed = await client.viewMyBuckets();
    t.equal(listed.Code, 0);
    t.equal(refusals, 2, 'after two refusals');
  });

  await t.test('without retries, the 503 is the error, with the service’s Message', async (t) => {
    const client = new FileStore({ url, appId: app.appId, appSecret: app.appSecret, retry: { retries: 0 } });
    await client.token();
    service.app.lifecycle.shuttingDown = true;
    t.teardown(() => void (service.app.lifecycle.shuttingDown = false));
    const error = (await client.viewMyBuckets().catch((e: unknown) => e)) as FileStoreError;
    t.match(error, { code: -1, message: 'The service is shutting down; send the request again.', status: 503 });
  });

  await t.test('nothing listening, and no retries left: the error says so', async (t) => {
    const closed = await freePort();
    const client = new FileStore({ url: `http://127.0.0.1:${closed}`, accessToken: 'x', retry: { retries: 1, baseDelayMs: 10 } });
    const error = (await client.viewMyBuckets().catch((e: unknown) => e)) as FileStoreError;
    t.match(error, { code: -1, status: 0, message: `The service at http://127.0.0.1:${closed} cannot be reached (ECONNREFUSED).` });
  });
});

t.test('load shedding: Retry-After is read, and a wait past the limit is not taken', async (t) => {
  // Any heap is over a one-byte limit: once sampled, every request is shed with Retry-After.
  const service = await startService(t, { env: { MAX_HEAP_USED_BYTES: '1' } });
  const url = await service.listen();
  await waitFor('load shedding', async () => (await fetch(`${url}/API/ViewBucketDetail?BucketId=1`)).status === 503, 30_000, 100);

  const { log, fetch: recorded } = recordingFetch();
  const client = new FileStore({ url, accessToken: 'x', fetch: recorded, retry: { retries: 3, maxDelayMs: 2_000 } });
  const error = (await client.viewBucketDetail(1).catch((e: unknown) => e)) as FileStoreError;
  t.match(error, { code: -1, status: 503, message: 'The service is overloaded right now; try again shortly.' });
  t.ok(error.retryAfter !== undefined && error.retryAfter > 2, `Retry-After ${error.retryAfter} s is on the error`);
  t.equal(log.length, 1, 'a wait longer than maxDelayMs is not taken');

  await t.test('a caller that gives up while the client waits', async (t) => {
    const controller = new AbortController();
    // Aborted once the refusal is in, while the client waits the seconds Retry-After asked for.
    const { fetch: aborting } = recordingFetch((outcome) => outcome instanceof Response && setTimeout(() => controller.abort(), 0));
    const patient = new FileStore({ url, accessToken: 'x', fetch: aborting });
    const started = Date.now();
    const aborted = (await patient.viewBucketDetail(1, { signal: controller.signal }).catch((e: unknown) => e)) as Error;
    t.equal(aborted.name, 'AbortError');
    t.ok(Date.now() - started < 3_000, 'at once, not after the wait');
  });
});

