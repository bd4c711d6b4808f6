import { FileStoreError, invalidArguments } from './errors.js';

/** A file on disk (Node.js only). */
export interface PathSource {
  path: string;
}

/** What an upload reads: bytes, a Blob (or File), a stream, any async iterable of bytes, or a path in Node.js. */
export type UploadSource = Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | PathSource;

/** A body of a request: bytes, a Blob, or bytes as they are read (sent as a stream where the platform can). */
export type Body = Uint8Array | Blob | AsyncIterable<Uint8Array>;

/** An opened source: its size and name when known, and its bytes. */
export interface Opened {
  readonly size: number | undefined;
  readonly name: string | undefined;
  /** Bytes [start, end), again and again: bytes, Blobs and files. */
  readonly range?: (start: number, end: number) => Body;
  /** The bytes once, in order: streams. */
  readonly sequence?: () => AsyncIterable<Uint8Array>;
  close(): Promise<void>;
}

/** Opens path sources; only the Node.js entry has one. */
export type PathOpener = (path: string) => Promise<Opened>;

const isAsyncIterable = (value: unknown): value is AsyncIterable<Uint8Array> =>
  typeof (value as AsyncIterable<Uint8Array>)?.[Symbol.asyncIterator] === 'function';

async function* chunksOf(stream: ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

const noop = async () => {};

export async function openSource(source: UploadSource, openPath: PathOpener | undefined, size?: number): Promise<Opened> {
  if (source instanceof Uint8Array || source instanceof ArrayBuffer) {
    const bytes = source instanceof Uint8Array ? source : new Uint8Array(source);
    return { size: bytes.byteLength, name: undefined, range: (start, end) => bytes.subarray(start, end), close: noop };
  }
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    const name = typeof (source as File).name === 'string' ? (source as File).name : undefined;
    return { size: source.size, name, range: (start, end) => source.slice(start, end), close: noop };
  }
  if (typeof ReadableStream !== 'undefined' && source instanceof ReadableStream) {
    return { size, name: undefined, sequence: () => chunksOf(source), close: noop };
  }
  if (isAsyncIterable(source)) return { size, name: undefined, sequence: () => source, close: noop };
  if (source && typeof (source as PathSource).path === 'string') {
    if (!openPath) throw new FileStoreError('Uploads from a path need Node.js.', { code: -1 });
    return openPath((source as PathSource).path);
  }
  throw invalidArguments(['The File field is required: give bytes, a Blob, a stream or a path.']);
}

/**
 * Reads a sequence in pieces of `size` bytes (the last may be shorter), each piece whole in
 * memory: a stream is sent in chunks that can be sent again when a request of one fails.
 */
export async function* pieces(sequence: AsyncIterable<Uint8Array>, size: number): AsyncIterable<Uint8Array> {
  let parts: Uint8Array[] = [];
  let held = 0;
  for await (const chunk of sequence) {
    let rest = chunk;
    while (held + rest.byteLength >= size) {
      const take = size - held;
      parts.push(rest.subarray(0, take));
      yield concat(parts, size);
      parts = [];
      held = 0;
      rest = rest.subarray(take);
    }
    if (rest.byteLength > 0) {
      parts.push(rest);
      held += rest.byteLength;
    }
  }
  if (held > 0) yield concat(parts, held);
}

function concat(parts: Uint8Array[], length: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}

/** The byte count of a body that is not a stream. */
export const bodySize = (body: Body): number | undefined => (body instanceof Uint8Array ? body.byteLength : typeof Blob !== 'undefined' && body instanceof Blob ? body.size : undefined);
