import { createHash, randomBytes } from 'node:crypto';
import type { Test } from 'tap';
import type { Backend } from '../../src/storage/backend.js';
import { newUploadId } from '../../src/services/resumable-uploads.js';
import { randomChunks, streamOf } from './blob-store-contract.js';
import { readBytes } from './stored-files.js';

const MiB = 1024 * 1024;

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** The ids a store lists, over every page. */
async function listed(backend: Backend): Promise<string[]> {
  const ids: string[] = [];
  for await (const page of backend.resumable.list()) ids.push(...page.map((entry) => entry.id));
  return ids.sort();
}

/** Finishes `id` into a blob write, commits it, and reads the file's bytes back from the blob store. */
async function finishAndRead(backend: Backend, id: string, size: number): Promise<{ bytes: Buffer | undefined; sha256: string; size: number; key: string }> {
  const write = await backend.resumable.finish(id, { maxBytes: size });
  await write.commit();
  const bytes = await readBytes(backend.blobs, write.key);
  await backend.blobs.remove([write.key]);
  return { bytes, sha256: write.sha256, size: write.size, key: write.key };
}

/**
 * What every ResumableBytes must do, whatever it keeps the bytes in, so that the resumable service
 * above it is written once: run on each backend against a real store. `newBackend` gives a
 * prepared backend of its own for one test; `partBytes` is a size past the store's smallest part.
 */
export async function resumableBytesContract(t: Test, newBackend: (t: Test) => Promise<Backend>, { partBytes = 6 * MiB } = {}): Promise<void> {
  t.test('appends make up the file, byte for byte, whatever their sizes', async (t) => {
    const backend = await newBackend(t);
    const id = newUploadId();
    await backend.resumable.create(id);
    const content = Buffer.concat(randomChunks(2 * partBytes + 12345));
    const cuts = [0, 1, 1000, partBytes - 7, partBytes + 5, 2 * partBytes, content.length];
    for (let i = 1; i < cuts.length; i++) {
      const offset = await backend.resumable.append(id, cuts[i - 1]!, streamOf([content.subarray(cuts[i - 1], cuts[i])]));
      t.equal(offset, cuts[i], `the append up to ${cuts[i]} says so`);
    }
    const file = await finishAndRead(backend, id, content.length);
    t.equal(file.size, content.length);
    t.equal(file.sha256, sha256(content), 'the write knows its sha256');
    t.ok(file.bytes?.equals(content), 'the committed file is the bytes appended');
  });

  t.test('an empty upload finishes into an empty file', async (t) => {
    const backend = await newBackend(t);
    const id = newUploadId();
    await backend.resumable.create(id);
    const file = await finishAndRead(backend, id, 0);
    t.equal(file.size, 0);
    t.equal(file.sha256, sha256(Buffer.alloc(0)));
  });

  t.test('an append at an earlier offset (its answer was lost) takes the bytes sent again once', async (t) => {
    const backend = await newBackend(t);
    const id = newUploadId();
    await backend.resumable.create(id);
    const content = Buffer.concat(randomChunks(2 * partBytes + 300));
    t.equal(await backend.resumable.append(id, 0, streamOf([content.subarray(0, 1000)])), 1000);
    t.equal(await backend.resumable.append(id, 1000, streamOf([content.subarray(1000, partBytes + 300)])), partBytes + 300);
    // The answer to the second append was lost: the client sends everything after 1000 again.
    t.equal(await backend.resumable.append(id, 1000, streamOf([content.subarray(1000)])), content.length);
    const file = await finishAndRead(backend, id, content.length);
    t.ok(file.bytes?.equals(content), 'the file holds each byte once, in its place');
    t.equal(file.sha256, sha256(content));
  });

  t.test('a source that fails keeps the bytes that arrived and counts them', async (t) => {
    const backend = await newBackend(t);
    const id = newUploadId();
    await backend.resumable.create(id);
    const chunks = randomChunks(3 * MiB, 256 * 1024);
    const offset = await backend.resumable.append(id, 0, streamOf(chunks, { count: 5, error: new Error('the client went away') }));
    t.ok(offset <= 5 * 256 * 1024, 'no more than what arrived');
    const next = Buffer.concat(chunks).subarray(offset);
    t.equal(await backend.resumable.append(id, offset, streamOf([next])), 3 * MiB, 'the client resumes from the offset it was told');
    const file = await finishAndRead(backend, id, 3 * MiB);
    t.ok(file.bytes?.equals(Buffer.concat(chunks)), 'the file is whole');
  });

  t.test('list names every upload with bytes, remove takes them, missing ones are ignored', async (t) => {
    const backend = await newBackend(t);
    const ids = [newUploadId(), newUploadId()].sort();
    const before = Date.now();
    for (const id of ids) {
      await backend.resumable.create(id);
      await backend.resumable.append(id, 0, streamOf([randomBytes(1000)]));
    }
    t.same(await listed(backend), ids);
    for await (const page of backend.resumable.list()) {
      for (const entry of page) t.ok(entry.modifiedAt.getTime() >= before - 5000, 'with when its bytes last changed');
    }
    await backend.resumable.remove([ids[0]!, newUploadId()]);
    t.same(await listed(backend), [ids[1]], 'removed, and a missing id is no error');
    await backend.resumable.remove([ids[1]!]);
    t.same(await listed(backend), []);
  });

  t.test('an upload removed is gone: appending to it fails, and nothing of it stays listed', async (t) => {
    const backend = await newBackend(t);
    const id = newUploadId();
    await backend.resumable.create(id);
    await backend.resumable.append(id, 0, streamOf([randomBytes(partBytes + 10)]));
    await backend.resumable.remove([id]);
    await t.rejects(backend.resumable.append(id, partBytes + 10, streamOf([randomBytes(10)])), 'an append to a removed upload fails');
    await backend.resumable.remove([id]);
    t.same(await listed(backend), [], 'nothing is listed, even after a failed append');
  });
}
