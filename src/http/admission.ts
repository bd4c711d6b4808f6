import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { refused } from '../errors.js';
import type { Admission, AdmittedWork } from '../services/admission.js';

/**
 * Waits for the app's turn at heavy work (see services/admission.ts); the turn lasts until the
 * response is over, sent to its end or cut, so a streamed listing holds it while it streams.
 *
 * Called once the AccessToken has named the app: that one indexed lookup (shared by the requests
 * of a burst, see appForToken) is all a waiting request has cost the database, and while it waits
 * it holds no pool connection and no time of the event loop (a parked promise). Everything after
 * the turn starts (authorization, the listing's pages, a purge's batches) is the work the turns
 * bound.
 *
 * A client that goes away while waiting leaves the queue at once: the ServerResponse's `close`
 * says so (the request's own `close` fires as soon as a form body has been read). Its request
 * then ends with clientGone, which nobody reads and nothing logs.
 */
export async function takeTurn(admission: Admission, response: ServerResponse, appId: string): Promise<void> {
  const gone = new AbortController();
  let release: (() => void) | undefined;
  let closed = response.destroyed;
  response.once('close', () => {
    closed = true;
    gone.abort();
    release?.();
  });
  try {
    release = await admission.admit(appId, closed ? AbortSignal.abort() : gone.signal);
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

/** takeTurn for a route of this instance, at `work` (listings and deletions unless said). */
export function admitHeavy(request: FastifyRequest, reply: FastifyReply, appId: string, work: AdmittedWork = 'requests'): Promise<void> {
  return takeTurn(request.server.admission[work], reply.raw, appId);
}
