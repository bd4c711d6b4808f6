import { randomBytes } from 'node:crypto';
import { access, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { TestService } from './service.js';

export interface StoredFile {
  fileKey: number;
  storageKey: string;
  /** Where the file's bytes are on disk. */
  bytesPath: string;
}

const DAY_MS = 86_400_000;

/**
 * Puts a file into a bucket the way an upload leaves it: bytes under the storage folder and a row.
 * `expired` backdates it so that it has outlived its AliveDays.
 */
export async function storeFile(
  service: TestService,
  bucketId: number,
  options: { expired?: boolean; name?: string } = {},
): Promise<StoredFile> {
  const storageKey = randomBytes(16).toString('hex');
  const bytesPath = path.join(service.config.storageDir, 'objects', storageKey.slice(0, 2), storageKey);
  await mkdir(path.dirname(bytesPath), { recursive: true });
  await writeFile(bytesPath, `bytes of ${storageKey}`);
  const uploadTime = new Date(Date.now() - (options.expired ? 3 * DAY_MS : 0));
  const row = await service.app.db
    .insertInto('files')
    .values({
      bucket_id: bucketId,
      real_file_name: options.name ?? `${storageKey}.txt`,
      file_extension: '.txt',
      size_bytes: 41,
      upload_time: uploadTime,
      alive_days: 1,
      expires_at: new Date(uploadTime.getTime() + DAY_MS),
      storage_key: storageKey,
      sha256: '0'.repeat(64),
    })
    .returning('file_key')
    .executeTakeFirstOrThrow();
  return { fileKey: row.file_key, storageKey, bytesPath };
}

export async function exists(filePath: string): Promise<boolean> {
  try {
    await access(filePath);
    return true;
  } catch {
    return false;
  }
}
