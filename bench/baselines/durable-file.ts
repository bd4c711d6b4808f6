import { createWriteStream } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

const CHUNK = 1024 * 1024;

async function fsyncPath(file: string, flags: 'r' | 'r+'): Promise<void> {
  const handle = await open(file, flags);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Writes `body` as it comes to `folder/name` and answers the bytes written. `durable` adds the
 * durability steps the service takes for each file: write to a temp name, fsync the file, rename
 * it into place, fsync the folder.
 */
export async function receiveFile(body: Readable, folder: string, name: string, durable: boolean): Promise<number> {
  const finalPath = path.join(folder, name);
  const writePath = durable ? `${finalPath}.part` : finalPath;
  const file = createWriteStream(writePath, { highWaterMark: CHUNK });
  await pipeline(body, file);
  if (durable) {
    await fsyncPath(writePath, 'r+');
    await rename(writePath, finalPath);
    await fsyncPath(folder, 'r');
  }
  return file.bytesWritten;
}
