import { S3Client } from '@aws-sdk/client-s3';
import { UndiciHttpHandler } from '@smithy/undici-http-handler';
import { Agent } from 'undici';
import type { S3Config } from '../../config.js';

/** A store that does not answer a connection within this time is unreachable. */
const S3_CONNECT_TIMEOUT_MS = 5_000;
/** A call whose answer has not begun within this time (its body sent included: a part) fails and is retried. */
export const S3_ANSWER_TIMEOUT_MS = 60_000;
/**
 * An answer whose body stops for this long is dropped, also in the middle of a download: as long as
 * the service's own default IDLE_TIMEOUT_SECONDS, so a slow reader, whose pauses stop the reads from
 * the store too, is not cut here first.
 */
const S3_IDLE_TIMEOUT_MS = 120_000;
/** Attempts per call, the first included, with the SDK's backoff between them. */
const S3_MAX_ATTEMPTS = 3;

export function createS3Client(s3: S3Config): S3Client {
  return new S3Client({
    region: s3.region,
    endpoint: s3.endpoint,
    forcePathStyle: s3.forcePathStyle,
    credentials: s3.accessKeyId && s3.secretAccessKey ? { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } : undefined,
    maxAttempts: S3_MAX_ATTEMPTS,
    // undici rather than node:http: Node's HTTP client copies every chunk of a body it receives into
    // a fresh buffer, whose pages a download from the store then faults in again and again.
    requestHandler: new UndiciHttpHandler({
      dispatcher: new Agent({ connect: { timeout: S3_CONNECT_TIMEOUT_MS }, headersTimeout: S3_ANSWER_TIMEOUT_MS, bodyTimeout: S3_IDLE_TIMEOUT_MS }),
    }),
    // Checksums only where S3 requires them: stores such as Ceph RGW 16 do not understand the
    // trailing checksums of the SDK's default, and the service hashes every upload itself.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

