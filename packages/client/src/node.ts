import { open, type FileHandle } from 'node:fs/promises';
import { basename } from 'node:path';
import { streamingBodies } from './bodies.js';
import { FileStore as BaseFileStore, type FileStoreOptions } from './client.js';
import type { Opened } from './sources.js';

export * from './index.js';

/** Reads 1 MiB at a time: Node's default 64 KiB reads cost more calls than the bytes are worth. */
const READ_BYTES = 1024 * 1024;

/** Bytes [start, end) of an open file, read in pieces: the same file (inode) however often it is read. */
async function* readRange(handle: FileHandle, path: string, start: number, end: number): AsyncIterable<Uint8Array> {
  for (let position = start; position < end; ) {
    const length = Math.min(READ_BYTES, end - position);
    const { bytesRead, buffer } = await handle.read(Buffer.allocUnsafe(length), 0, length, position);
    if (bytesRead === 0) throw new Error(`${path} became shorter while it was uploaded.`);
    position += bytesRead;
    yield buffer.subarray(0, bytesRead);
  }
}

/** A file on disk: its size when opened, and any range of it streamed from disk again and again. */
async function openPath(path: string): Promise<Opened> {
  const handle = await open(path, 'r');
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw Object.assign(new Error(`${path} is not a file`), { code: 'EISDIR' });
    return {
      size: stats.size,
      name: basename(path),
      range: (start, end) => readRange(handle, path, start, end),
      close: () => handle.close(),
    };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** The client in Node.js: uploads from a path, and request bodies streamed with progress as they are read. */
export class FileStore extends BaseFileStore {
  constructor(options: FileStoreOptions) {
    super(options, { openPath, bodies: streamingBodies });
  }
}
