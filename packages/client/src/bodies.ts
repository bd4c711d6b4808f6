import { bodySize, type Body } from './sources.js';

/** How this platform sends request bodies. */
export interface BodySender {
  /**
   * The body for fetch, reporting bytes as they go (`onBytes` with each count), and its init
   * options. Where fetch can stream a request (Node.js), bytes are counted as they are read;
   * elsewhere the body goes whole and is counted when the answer comes.
   */
  prepare(body: Body, onBytes: (count: number) => void): Promise<{ body: NonNullable<RequestInit['body']>; init: RequestInit; sent?: () => void }>;
}

/** Slices a piece of bytes into reads of this size, so that progress moves within it. */
const READ_BYTES = 256 * 1024;

async function* counted(body: Body, onBytes: (count: number) => void): AsyncIterable<Uint8Array> {
  if (body instanceof Uint8Array) {
    for (let at = 0; at < body.byteLength; at += READ_BYTES) {
      const piece = body.subarray(at, Math.min(body.byteLength, at + READ_BYTES));
      yield piece;
      onBytes(piece.byteLength);
    }
    return;
  }
  const chunks: AsyncIterable<Uint8Array> = body instanceof Blob ? (body.stream() as unknown as AsyncIterable<Uint8Array>) : body;
  for await (const chunk of chunks) {
    yield chunk;
    onBytes(chunk.byteLength);
  }
}

function streamOf(chunks: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const iterator = chunks[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await iterator.next();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    async cancel(reason) {
      await iterator.return?.(reason);
    },
  });
}

/** Node.js: bodies stream (`duplex: 'half'`), counted as they are read. */
export const streamingBodies: BodySender = {
  async prepare(body, onBytes) {
    return { body: streamOf(counted(body, onBytes)), init: { duplex: 'half' } as RequestInit };
  },
};

/** Browsers: fetch sends only whole bodies; a stream is gathered into a Blob first. */
export const wholeBodies: BodySender = {
  async prepare(body, onBytes) {
    let whole: Uint8Array | Blob;
    if (body instanceof Uint8Array || body instanceof Blob) whole = body;
    else {
      const parts: Uint8Array[] = [];
      for await (const chunk of body) parts.push(chunk);
      whole = new Blob(parts as never[]);
    }
    const size = bodySize(whole) ?? 0;
    return { body: whole as NonNullable<RequestInit['body']>, init: {}, sent: () => onBytes(size) };
  },
};
