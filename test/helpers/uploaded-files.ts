import { createHash } from 'node:crypto';
import type { Test } from 'tap';
import { createBucket, uniqueBucketName } from './buckets.js';
import { startService, type TestService } from './service.js';
import { incompleteWrites, readBytes, storedKeys } from './stored-files.js';

// What the upload tests check after an upload: rows, stored bytes, what is left in the store.

/** sha256 of the bytes stored under a key, read back through the store. */
export async function sha256Of(service: TestService, storageKey: string): Promise<string> {
  return createHash('sha256').update((await readBytes(service.app.storage, storageKey)) ?? '').digest('hex');
}

export async function fileRow(service: TestService, fileKey: number) {
  return service.app.db.selectFrom('files').selectAll().where('file_key', '=', fileKey).executeTakeFirst();
}

export async function filesIn(service: TestService, bucketId: number) {
  return service.app.db.selectFrom('files').selectAll().where('bucket_id', '=', bucketId).execute();
}

/** Everything in the store: stored objects and writes in progress. */
export async function storedPaths(service: TestService): Promise<string[]> {
  return [...(await storedKeys(service.app.storage)), ...(await incompleteWrites(service.app.storage))];
}

/** A listening service, an app and a bucket of its own to upload into. */
export async function startUploadService(t: Test, env: Record<string, string> = {}, bucket: { openToUpload?: boolean } = {}) {
  const service = await startService(t, { env });
  const baseUrl = await service.listen();
  const owner = await service.newApp();
  const bucketName = uniqueBucketName('up');
  const bucketId = await createBucket(service, owner.token, { name: bucketName, ...bucket });
  return { service, baseUrl, owner, bucketId, bucketName };
}
