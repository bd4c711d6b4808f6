import type { IncomingMessage, ServerResponse } from 'node:http';
import { finished } from 'node:stream';
import { NodeRequest } from 'srvx/node';

/** Bytes of a body read ahead of its consumer. */
const READ_AHEAD_BYTES = 1024 * 1024;

/** srvx's Fetch API view of a request (for @tus/server), its body read as webBody() reads it. */
export function fetchRequest(req: IncomingMessage, res: ServerResponse): Request {
  const request = new NodeRequest({ req, res });
  let body: ReadableStream<Uint8Array> | null | undefined;
  const method = req.method ?? 'GET';
  Object.defineProperty(request, 'body', { get: () => (body ??= method === 'GET' || method === 'HEAD' ? null : webBody(req)) });
  return request as unknown as Request;
}

/**
 * A request's body as a web stream. Node's `Readable.toWeb` copies every chunk into a new array and
 * stops the socket whenever 16 KiB wait. The chunks a request emits are its own (each socket read
 * is a new buffer), so they pass as they are.
 */
export function webBody(source: IncomingMessage): ReadableStream<Uint8Array> {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let canceled = false;
  source.pause();
  const cleanup = finished(source, (error) => {
    cleanup();
    // Late errors of a finished request must not go unhandled.
    source.on('error', () => {});
    if (canceled) return;
    if (error) controller.error(error);
    else controller.close();
  });
  source.on('data', (chunk: Buffer) => {
    controller.enqueue(chunk);
    if ((controller.desiredSize ?? 0) <= 0) source.pause();
  });
  return new ReadableStream<Uint8Array>(
    {
      start: (c) => {
        controller = c;
      },
      pull: () => {
        source.resume();
      },
      cancel: (reason) => {
        canceled = true;
        source.destroy(reason instanceof Error ? reason : undefined);
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: READ_AHEAD_BYTES }),
  );
}
