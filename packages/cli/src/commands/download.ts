import { createWriteStream } from 'node:fs';
import { rename, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Download, FileStore, StoredFile } from '@filestore/client';
import { humanSize, json, line, printable, UsageError, type Io } from '../output.js';
import { progressFor } from '../progress.js';
import { findFile } from '../resolve.js';
import type { openSession } from '../session.js';

type Session = Awaited<ReturnType<typeof openSession>>;

const sizeOf = (file: string) => stat(file).then((info) => info, () => undefined);

/** The bytes of a file from `start` on: by its FileKey when its bucket is OpenToRead, else through a one-use secret. */
async function open(client: FileStore, file: StoredFile, start: number, signal: AbortSignal): Promise<Download> {
  const { OpenToRead } = await client.viewBucketDetail(file.BucketId, { signal });
  const range = start > 0 ? { range: { start } } : {};
  if (OpenToRead) return client.downloadFromKey(file.FileKey, { ...range, signal });
  const { Value } = await client.generateSecret(file.FileKey, { maxUseTimes: 1, signal });
  return client.downloadFromSecret(Value, { ...range, signal });
}

/**
 * `download FILEKEY|BUCKET/NAME [-o PATH]`: into PATH (a folder: its RealFileName there; default the
 * current folder) through `PATH.<FileKey>.part`, renamed when whole. A file's bytes never change
 * under its FileKey, so a part left by an interrupted run is continued with a range.
 */
export async function download(io: Io, { client, signal }: Session, target: string, flags: { output?: string | undefined; force: boolean; json: boolean }): Promise<void> {
  const file = await findFile(client, target, signal);
  const toStdout = flags.output === '-';
  if (toStdout) {
    const reply = await open(client, file, 0, signal);
    await pipeline(reply.body ? Readable.fromWeb(reply.body as never) : Readable.from([]), io.out as Writable, { signal });
    return;
  }
  const given = flags.output ?? '.';
  const destination = (await sizeOf(given))?.isDirectory() ? path.join(given, path.basename(file.RealFileName)) : given;
  if ((await sizeOf(destination)) && !flags.force) throw new UsageError(`${destination} exists: add --force to replace it.`);
  const part = `${destination}.${file.FileKey}.part`;
  const held = (await sizeOf(part))?.size ?? 0;
  const start = held < file.JFileSize ? held : 0;

  const progress = progressFor(io);
  const bar = progress.bar(printable(file.RealFileName), file.JFileSize);
  bar.update(start);
  try {
    const reply = await open(client, file, start, signal);
    // A service that ignored the range sends the whole file: it is written from the start.
    let done = reply.status === 206 ? start : 0;
    const counted = async function* (chunks: AsyncIterable<Uint8Array>) {
      for await (const chunk of chunks) {
        done += chunk.byteLength;
        bar.update(done);
        yield chunk;
      }
    };
    const out = createWriteStream(part, { flags: reply.status === 206 ? 'a' : 'w', mode: 0o644 });
    await pipeline(reply.body ? Readable.fromWeb(reply.body as never) : Readable.from([]), counted, out, { signal });
    const written = (await sizeOf(part))?.size ?? 0;
    if (written !== file.JFileSize) throw new Error(`The download stopped at ${written} of ${file.JFileSize} bytes; run the command again to continue.`);
    await rename(part, destination);
  } finally {
    bar.stop();
    progress.stop();
  }
  if (flags.json) return void json(io, { FileKey: file.FileKey, RealFileName: file.RealFileName, Path: destination, Size: file.JFileSize, Resumed: start });
  line(io.out, `Downloaded ${printable(file.RealFileName)} to ${printable(destination)} (${humanSize(file.JFileSize)}${start > 0 ? `, resumed at ${humanSize(start)}` : ''}).`);
}
