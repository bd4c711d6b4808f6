import type { StoredFile } from '@filestore/client';
import { describeError, humanSize, json, line, printable, shortTime, table, type Io } from '../output.js';
import { fileKey, findBucket } from '../resolve.js';
import type { openSession } from '../session.js';

type Session = Awaited<ReturnType<typeof openSession>>;
const DAY_MS = 86_400_000;
const expiry = (file: StoredFile) => Date.parse(file.UploadTime) + file.AliveDays * DAY_MS;

/** `ls BUCKET`: the files as the listing streams in; --json writes the array as it goes, too. */
export async function listFiles(io: Io, { client, signal }: Session, name: string, asJson: boolean): Promise<void> {
  const bucket = await findBucket(client, name, signal);
  if (asJson) {
    let count = 0;
    for await (const file of client.files(bucket.BucketId, { signal })) io.out.write(`${count++ === 0 ? '[\n' : ',\n'}${JSON.stringify(file)}`);
    line(io.out, count === 0 ? '[]' : '\n]');
    return;
  }
  const rows: string[][] = [];
  for await (const file of client.files(bucket.BucketId, { signal })) {
    rows.push([String(file.FileKey), humanSize(file.JFileSize), shortTime(file.UploadTime), shortTime(expiry(file)), String(file.DownloadTimes), printable(file.RealFileName)]);
  }
  if (rows.length === 0) return void line(io.out, `${printable(bucket.BucketName)} has no files.`);
  table(io, ['FILEKEY', 'SIZE', 'UPLOADED', 'EXPIRES', 'DOWNLOADS', 'NAME'], rows);
}

export async function showFile(io: Io, { client, signal }: Session, key: string, asJson: boolean): Promise<void> {
  const { File: file } = await client.viewOneFile(fileKey(key), { signal });
  if (asJson) return void json(io, file);
  const rows: Array<[string, string]> = [
    ['FileKey', String(file.FileKey)],
    ['Name', printable(file.RealFileName)],
    ['Size', `${humanSize(file.JFileSize)} (${file.JFileSize} bytes)`],
    ['BucketId', String(file.BucketId)],
    ['Uploaded', file.UploadTime],
    ['Expires', new Date(expiry(file)).toISOString()],
    ['Downloads', String(file.DownloadTimes)],
    ['Link', file.InternetPath],
  ];
  for (const [label, value] of rows) line(io.out, `${`${label}:`.padEnd(11)}${value}`);
}

/** `rm FILEKEY...`: each one deleted, or its refusal told; true when all were. */
export async function removeFiles(io: Io, { client, signal }: Session, keys: string[], asJson: boolean): Promise<boolean> {
  const deleted: number[] = [];
  const failed: Array<{ FileKey: number } & ReturnType<typeof describeError>> = [];
  for (const key of keys.map(fileKey)) {
    try {
      await client.deleteFile(key, { signal });
      deleted.push(key);
      if (!asJson) line(io.out, `Deleted ${key}.`);
    } catch (error) {
      if (signal.aborted) throw error;
      failed.push({ FileKey: key, ...describeError(error) });
      if (!asJson) line(io.err, `filestore: ${key}: ${printable(describeError(error).Message)}`);
    }
  }
  if (asJson) json(io, { Deleted: deleted, Failed: failed });
  return failed.length === 0;
}

export async function share(io: Io, { client, signal }: Session, key: string, uses: number, asJson: boolean): Promise<void> {
  const secret = await client.generateSecret(fileKey(key), { maxUseTimes: uses, signal });
  const link = client.secretUrl(secret.Value);
  if (asJson) return void json(io, { FileKey: Number(key), MaxUseTimes: uses, Link: link });
  line(io.out, link);
}
