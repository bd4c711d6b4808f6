import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * A keep-alive connection closed by the server while the client's next request is already on the
 * wire is answered by the kernel with a reset: the client gets ECONNRESET and no answer. Node's own
 * shutdown (server.close(), closeIdleConnections()) closes every connection without a request in
 * progress at once, fresh ones included, and so resets exactly those requests.
 *
 * Draining instead keeps every connection open during shutdown: a request that arrives on one is
 * answered (503 with `Connection: close` from the protection hook), after which Node ends the
 * connection cleanly. Only a connection on which nothing at all has moved for `quietMs` is closed
 * early, so idle clients do not hold the shutdown for the whole grace period.
 */
export interface DrainOptions {
  /** An idle connection is closed once no byte has arrived on it for this long. */
  quietMs: number;
  /** How often idle connections are checked. */
  checkIntervalMs: number;
}

interface Tracked {
  busy: number;
  bytesRead: number;
  quietSince: number;
}

/**
 * Tracks the server's connections from now on; call at start-up, so that every connection is known.
 * `drain` closes the listener, stops Node from closing idle connections abruptly, closes quiet ones
 * as described above, and resolves once no connection is left.
 */
export function trackConnections(server: Server, { quietMs, checkIntervalMs }: DrainOptions): { drain(): Promise<void> } {
  const connections = new Map<Socket, Tracked>();
  server.on('connection', (socket: Socket) => {
    connections.set(socket, { busy: 0, bytesRead: 0, quietSince: Date.now() });
    socket.once('close', () => connections.delete(socket));
  });
  server.on('request', (request, response) => {
    const tracked = connections.get(request.socket);
    if (!tracked) return;
    tracked.busy += 1;
    response.once('close', () => {
      tracked.busy -= 1;
      tracked.quietSince = Date.now();
    });
  });

  return {
    drain: () => {
      // Node's server.close() and Fastify's close both call this: it would reset requests in flight to us.
      server.closeIdleConnections = () => {};
      const timer = setInterval(() => {
        const now = Date.now();
        for (const [socket, tracked] of connections) {
          // bytesRead moves when part of a request arrived, even before Node saw a whole request head.
          if (socket.bytesRead !== tracked.bytesRead) {
            tracked.bytesRead = socket.bytesRead;
            tracked.quietSince = now;
          } else if (tracked.busy === 0 && now - tracked.quietSince >= quietMs) {
            socket.destroy();
          }
        }
      }, checkIntervalMs);
      // The listener closes now; the callback comes once the last connection has closed.
      return new Promise<void>((resolve) =>
        server.close(() => {
          clearInterval(timer);
          resolve();
        }),
      );
    },
  };
}
