import { randomBytes } from 'node:crypto';
import { mkdtemp, open, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { DiskResumableBytes } from '../src/storage/disk/resumable-bytes.js';
import { DiskStore } from '../src/storage/disk/store.js';

/** An id as the service makes them. */
const ID = randomBytes(16).toString('hex');

t.test('an append counts the bytes it wrote, not those a writer whose lease ran out put past them', async (t) => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'disk-resumable-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const store = new DiskStore(root);
  await store.prepare();
  const bytes = new DiskResumableBytes(store);
  await bytes.prepare();
  await bytes.create(ID);
  const file = path.join(bytes.dir, ID);

  const source = new PassThrough();
  const appended = bytes.append(ID, 0, source);
  source.write(Buffer.alloc(1000, 1));
  while ((await stat(file)).size < 1000) await sleep(5);
  // The other writer, still sending, writes further on in the same file.
  const stale = await open(file, 'r+');
  await stale.write(Buffer.alloc(1000, 2), 0, 1000, 2000);
  await stale.close();
  source.end(Buffer.alloc(500, 1));

  t.equal(await appended, 1500, 'the offset is where this append ended');
  t.equal(await bytes.append(ID, 1500, new PassThrough().end(Buffer.alloc(100, 3))), 1600, 'the next append goes on from there');
  t.same(await readFile(file), Buffer.concat([Buffer.alloc(1500, 1), Buffer.alloc(100, 3)]), 'and the bytes past it are gone');
});
