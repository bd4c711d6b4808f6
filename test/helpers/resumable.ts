import type { Test } from 'tap';
import { createBucket } from './buckets.js';
import { startService, type TestService } from './service.js';
import { metadata, tusRequest } from './tus.js';

export const OCTETS = 'application/offset+octet-stream';

/** A service, an app's token and a bucket open to read: what the resumable tests start from. */
export interface ResumableSetup {
  service: TestService;
  base: string;
  endpoint: string;
  token: string;
  bucketId: number;
}

export async function setupResumable(t: Test, env: Record<string, string> = {}): Promise<ResumableSetup> {
  const service = await startService(t, { env });
  const base = await service.listen();
  const { token } = await service.newApp();
  const bucketId = await createBucket(service, token, { openToRead: true });
  return { service, base, endpoint: `${base}/API/ResumableUpload`, token, bucketId };
}

/** The creation POST of an upload of `size` bytes named `fileName` into the setup's bucket. */
export function createResumable(s: ResumableSetup, size: number, fileName: string, extra: Record<string, string> = {}) {
  return tusRequest(s.endpoint, 'POST', {
    Authorization: `Bearer ${s.token}`,
    'Upload-Length': size,
    'Upload-Metadata': metadata({ filename: fileName, BucketId: String(s.bucketId), AliveDays: '3', ...extra }),
  });
}
