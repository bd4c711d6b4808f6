import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { loadConfig } from '../src/config.js';
import type { Backend } from '../src/storage/backend.js';
import { createBackend } from '../src/storage/backends.js';
import { resumableBytesContract } from './helpers/resumable-bytes-contract.js';
import { s3ServiceEnv, testBucketName, whyNoS3 } from './helpers/s3.js';

/** The ResumableBytes contract on every backend, each against its real store. */

const MiB = 1024 * 1024;

async function backendFor(t: Test, env: Record<string, string>): Promise<Backend> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'resumable-bytes-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const backend = await createBackend(loadConfig({ DATA_DIR: dataDir, ...env }));
  await backend.blobs.prepare();
  await backend.resumable.prepare();
  return backend;
}

t.test('on disk', (t) => resumableBytesContract(t, (t) => backendFor(t, {})));

t.test('on S3', { skip: whyNoS3() }, (t) =>
  // The smallest part S3 takes, so that the tests' uploads span parts and tails.
  resumableBytesContract(t, (t) => backendFor(t, s3ServiceEnv(testBucketName(t), { S3_PART_SIZE_BYTES: String(5 * MiB) })), { partBytes: 6 * MiB }),
);
