import http from 'node:http';
import t from 'tap';
import { serverData, startServerProcess } from './helpers/process.js';

/**
 * A rolling restart sends SIGTERM to an instance while clients (or a balancer) hold keep-alive
 * connections to it and keep sending. No request may be reset: each one gets its full answer or the
 * 503 with `Connection: close`; once the listener is closed, a new connection is refused, which a
 * client or balancer retries elsewhere safely because nothing was sent.
 */
const CLIENTS = 8;
const APP = { id: 'rolling-app', secret: 'rolling-app-secret-0123456789' };

interface Tally {
  ok: number;
  okClosing: number;
  refused503: number;
  refused503WithoutClose: number;
  connectionRefused: number;
  resets: string[];
  other: string[];
}

function get(agent: http.Agent, url: string): Promise<{ status: number; connection: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { agent }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, connection: response.headers.connection, body }));
      response.on('error', reject);
    });
    request.on('error', reject);
  });
}

/** Sends back to back on one keep-alive connection (reopened only when the server closes it) until refused. */
async function client(url: string, tally: Tally, signalled: () => boolean): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (;;) {
      try {
        const { status, connection, body } = await get(agent, url);
        if (status === 200) {
          if (signalled() && connection === 'close') tally.okClosing += 1;
          else tally.ok += 1;
        } else if (status === 503) {
          tally.refused503 += 1;
          if (connection !== 'close') tally.refused503WithoutClose += 1;
        } else tally.other.push(`${status} ${body}`);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ECONNREFUSED') {
          tally.connectionRefused += 1;
          return;
        }
        if (code === 'ECONNRESET' || code === 'EPIPE') tally.resets.push(`${code}: ${(error as Error).message}`);
        else tally.other.push(`${code}: ${(error as Error).message}`);
        if (!signalled()) continue;
        return;
      }
    }
  } finally {
    agent.destroy();
  }
}

t.test('SIGTERM with eight keep-alive clients sending back to back: no request is reset', async (t) => {
  const data = await serverData(t, 'rolling');
  const server = await startServerProcess({ ...data.env, BOOTSTRAP_APPS: `${APP.id}:${APP.secret}`, SHUTDOWN_GRACE_SECONDS: '20' });
  t.teardown(() => server.stop('SIGKILL'));
  const post = async (path: string, fields: Record<string, string>) =>
    (await (await fetch(`${server.baseUrl}${path}`, { method: 'POST', body: new URLSearchParams(fields) })).json()) as Record<string, unknown>;
  const { AccessToken } = await post('/API/AccessToken', { AppId: APP.id, AppSecret: APP.secret });
  const { BucketId } = await post('/API/CreateBucket', { AccessToken: String(AccessToken), BucketName: 'rolling', OpenToRead: 'true', OpenToUpload: 'false' });
  const url = `${server.baseUrl}/API/ViewBucketDetail?AccessToken=${String(AccessToken)}&BucketId=${String(BucketId)}`;

  const tally: Tally = { ok: 0, okClosing: 0, refused503: 0, refused503WithoutClose: 0, connectionRefused: 0, resets: [], other: [] };
  let signalled = false;
  const clients = Array.from({ length: CLIENTS }, () => client(url, tally, () => signalled));
  // Every client is under way on its own connection before the signal.
  const deadline = Date.now() + 60_000;
  while (tally.ok < CLIENTS * 20 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
  signalled = true;
  const exitCode = await server.stop('SIGTERM');
  await Promise.all(clients);

  t.comment(JSON.stringify({ ...tally, resets: tally.resets.length, other: tally.other.length }));
  t.same(tally.resets, [], 'no request was reset');
  t.same(tally.other, [], 'no other failure');
  t.equal(tally.refused503WithoutClose, 0, 'every 503 says Connection: close');
  // Whether a client's next request lands before or after its answer in flight is the machine's timing:
  // either way the connection ends with an answer that says Connection: close, never a reset.
  t.ok(tally.refused503 + tally.okClosing > 0, 'answers after SIGTERM (full, or the 503) say Connection: close');
  t.equal(tally.connectionRefused, CLIENTS, 'each client then found the listener closed');
  t.equal(exitCode, 0, 'the process exits cleanly');
});
