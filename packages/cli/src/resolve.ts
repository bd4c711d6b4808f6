import type { Bucket, FileStore, StoredFile } from '@filestore/client';
import { UsageError } from './output.js';

const options = (signal: AbortSignal) => ({ signal });

/**
 * A bucket named on the command line: one of the app's own by name (in any case), else a BucketId
 * (another app's OpenToRead bucket can only be named so).
 */
export async function findBucket(client: FileStore, name: string, signal: AbortSignal): Promise<Pick<Bucket, 'BucketId' | 'BucketName' | 'OpenToRead'>> {
  const { Buckets } = await client.viewMyBuckets(options(signal));
  const own = Buckets.find((bucket) => bucket.BucketName.toLowerCase() === name.toLowerCase());
  if (own) return own;
  if (/^\d{1,15}$/.test(name)) return client.viewBucketDetail(Number(name), options(signal));
  throw new Error(`You have no bucket called ${name}.`);
}

export function fileKey(text: string): number {
  if (!/^\d{1,15}$/.test(text) || Number(text) < 1) throw new UsageError(`${text} is not a FileKey.`);
  return Number(text);
}

/** A file named as FILEKEY or BUCKET/NAME. */
export async function findFile(client: FileStore, target: string, signal: AbortSignal): Promise<StoredFile> {
  const slash = target.indexOf('/');
  if (slash < 0) return (await client.viewOneFile(fileKey(target), options(signal))).File;
  const bucket = await findBucket(client, target.slice(0, slash), signal);
  const name = target.slice(slash + 1);
  for await (const file of client.files(bucket.BucketId, options(signal))) if (file.RealFileName === name) return file;
  throw new Error(`There is no file called ${name} in ${bucket.BucketName}.`);
}
