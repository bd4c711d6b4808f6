import type { FastifyReply, FastifyRequest } from 'fastify';
import { refused } from '../errors.js';

/**
 * Waits for the app's turn at heavy work (see services/admission.ts); the turn lasts until the
 * response is over, sent to its end or cut, so a streamed listing holds it while it streams.
 *
 * Called once the AccessToken has named the app: that one indexed lookup is all a waiting request
 * has cost the database, and while it waits it holds no pool connection and no time of the event
 * loop (a parked promise). Everything after the turn starts (authorization, the listing's pages, a
 * purge's batches) is the work the turns bound.
 *
 * A client that goes away while waiting leaves the queue at once: the ServerResponse's `close`
 * (not the request's, which fires as soon as a form body has been read) says so.
 */
export async function admitHeavy(request: FastifyRequest, reply: FastifyReply, appId: string): Promise<void> {
  const response = reply.raw;
  const gone = new AbortController();
  let release: (() => void) | undefined;
  let closed = response.destroyed;
  response.once('close', () => {
    closed = true;
    gone.abort();
    release?.();
  });
  try {
    release = await request.server.admission.admit(appId, closed ? AbortSignal.abort() : gone.signal);
  } catch (error) {
    if (closed) throw refused.clientGone();
    throw error;
  }
  // Closed between the turn being handed over and now: it ends here.
  if (closed) {
    release();
    throw refused.clientGone();
  }
}
