import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import type { BlobStore } from '../../src/storage/blob-store.js';
import { isStorageError } from '../../src/storage/errors.js';
import type { TestService } from './service.js';

export interface StoredFile {
  fileKey: number;
  storageKey: string;
  /** The bytes stored. */
  content: Buffer;
}

const DAY_MS = 86_400_000;

/** Writes bytes into the store and commits them, as an upload does; returns their key. */
export async function putBytes(storage: BlobStore, content: Buffer): Promise<string> {
  const written = await storage.write(Readable.from([content]), { maxBytes: content.length });
  await written.commit();
  return written.key;
}

/**
 * Puts a file into a bucket the way an upload leaves it: bytes in the service's store and a row.
 * `expired` backdates it so that it has outlived its AliveDays.
 */
export async function storeFile(
  service: TestService,
  bucketId: number,
  options: { expired?: boolean; name?: string } = {},
): Promise<StoredFile> {
  const content = Buffer.from(`bytes of ${randomBytes(16).toString('hex')}`);
  const storageKey = await putBytes(service.app.storage, content);
  const uploadTime = new Date(Date.now() - (options.expired ? 3 * DAY_MS : 0));
  const row = await service.app.db
    .insertInto('files')
    .values({
      bucket_id: bucketId,
      real_file_name: options.name ?? `${storageKey}.txt`,
      file_extension: '.txt',
      size_bytes: content.length,
      upload_time: uploadTime,
      alive_days: 1,
      expires_at: new Date(uploadTime.getTime() + DAY_MS),
      storage_key: storageKey,
      sha256: '0'.repeat(64),
    })
    .returning('file_key')
    .executeTakeFirstOrThrow();
  return { fileKey: row.file_key, storageKey, content };
}

/** The stored bytes of a key, read back through the store; undefined when there are none. */
export async function readBytes(storage: BlobStore, storageKey: string): Promise<Buffer | undefined> {
  try {
    return await buffer((await storage.open(storageKey)).stream);
  } catch (error) {
    if (isStorageError(error, 'not-found')) return undefined;
    throw error;
  }
}

export async function hasBytes(storage: BlobStore, storageKey: string): Promise<boolean> {
  return (await readBytes(storage, storageKey)) !== undefined;
}

/** Every stored key of the store. */
export async function storedKeys(storage: BlobStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const page of storage.listObjects()) keys.push(...page.map((object) => object.key));
  return keys.sort();
}

/** Every incomplete write of the store (an upload streaming in, or one a crash left). */
export async function incompleteWrites(storage: BlobStore): Promise<string[]> {
  const ids: string[] = [];
  for await (const page of storage.listIncompleteWrites()) ids.push(...page.map((write) => write.id));
  return ids.sort();
}
