import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { HASHED_IN_PLACE_LENGTH, Sha256 } from '../src/storage/sha256-threads.js';

const KiB = 1024;
const MiB = 1024 * KiB;

/** Adds the chunks as an upload does: waiting whenever the hash asks it to. */
async function digestOf(chunks: Buffer[], lengthAtMost?: number): Promise<string> {
  const hash = new Sha256(lengthAtMost);
  for (const chunk of chunks) await hash.update(chunk);
  return hash.digest();
}

const expected = (chunks: Buffer[]) => createHash('sha256').update(Buffer.concat(chunks)).digest('hex');

t.test('the digest is the sha256 of every byte added, whatever the chunking', async (t) => {
  const cases: Record<string, Buffer[]> = {
    'no bytes': [],
    'one byte': [Buffer.from('x')],
    '64 KiB, hashed in place': [randomBytes(64 * KiB)],
    '64 KiB and one byte, hashed on the thread': [randomBytes(32 * KiB), randomBytes(32 * KiB + 1)],
    'one batch exactly': [randomBytes(256 * KiB)],
    'a batch and one byte': [randomBytes(256 * KiB + 1)],
    'odd chunks across batches': Array.from({ length: 40 }, (_, i) => randomBytes(7 * KiB + i * 331)),
    'one chunk of several batches': [randomBytes(3 * MiB + 5)],
  };
  for (const [name, chunks] of Object.entries(cases)) t.equal(await digestOf(chunks), expected(chunks), name);
});

t.test('a hash told its length is small gives the same digests, hashed in place', async (t) => {
  const cases: Record<string, Buffer[]> = {
    'no bytes': [],
    'one byte': [Buffer.from('x')],
    'odd chunks across batches': Array.from({ length: 40 }, (_, i) => randomBytes(7 * KiB + i * 331)),
    'the whole length in place': [randomBytes(HASHED_IN_PLACE_LENGTH - 1), Buffer.from('z')],
  };
  for (const [name, chunks] of Object.entries(cases)) {
    const length = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
    t.equal(await digestOf(chunks, length), expected(chunks), `${name}, told its exact length`);
    t.equal(await digestOf(chunks, HASHED_IN_PLACE_LENGTH), expected(chunks), `${name}, told the largest length hashed in place`);
  }
  const beyond = [randomBytes(HASHED_IN_PLACE_LENGTH + 1)];
  t.equal(await digestOf(beyond, HASHED_IN_PLACE_LENGTH + 1), expected(beyond), 'one byte more, hashed on the thread');
});

t.test('in place, a hash never asks its caller to wait; past the length, a thread that is behind does', async (t) => {
  const small = new Sha256(HASHED_IN_PLACE_LENGTH);
  t.equal(small.update(randomBytes(2 * MiB)), undefined, '2 MiB at once, hashed at once');
  t.equal(small.update(randomBytes(2 * MiB)), undefined);
  await small.digest();
  const large = new Sha256(HASHED_IN_PLACE_LENGTH + 1);
  const behind = large.update(randomBytes(2 * MiB));
  t.type(behind, Promise, 'a larger hash goes to its thread, whose queue is bounded');
  await behind;
  await large.digest();
});

t.test('many hashes at once keep their bytes apart', async (t) => {
  const uploads = Array.from({ length: 12 }, (_, i) => Array.from({ length: 20 }, () => randomBytes(50 * KiB + i)));
  const digests = await Promise.all(uploads.map((chunks) => digestOf(chunks)));
  t.same(digests, uploads.map(expected));
});

t.test('update() copies: the caller may reuse its buffer at once', async (t) => {
  const buffer = Buffer.alloc(100 * KiB, 1);
  const hash = new Sha256();
  await hash.update(buffer);
  buffer.fill(2);
  await hash.update(buffer);
  t.equal(await hash.digest(), createHash('sha256').update(Buffer.alloc(100 * KiB, 1)).update(Buffer.alloc(100 * KiB, 2)).digest('hex'));
});

t.test('a hash that is behind holds its caller back instead of queueing without bound', async (t) => {
  const hash = new Sha256();
  const behind = hash.update(randomBytes(2 * MiB));
  t.type(behind, Promise, '2 MiB at once is more than a hash may have waiting: the caller is asked to wait');
  await behind;
  t.equal(hash.update(Buffer.from('a')), undefined, 'once the thread caught up, a small update goes through at once');
  await hash.digest();
});

t.test('a dropped or digested hash takes no more bytes', async (t) => {
  const dropped = new Sha256();
  await dropped.update(randomBytes(300 * KiB));
  dropped.drop();
  t.throws(() => dropped.update(Buffer.from('a')), /already digested or dropped/);
  await t.rejects(dropped.digest(), /already digested or dropped/);
  const digested = new Sha256();
  await digested.digest();
  t.throws(() => digested.update(Buffer.from('a')), /already digested or dropped/);
  const small = new Sha256();
  await small.update(Buffer.from('small'));
  small.drop();
  await t.rejects(small.digest(), /already digested or dropped/);
  const inPlace = new Sha256(KiB);
  await inPlace.update(Buffer.from('in place'));
  inPlace.drop();
  t.throws(() => inPlace.update(Buffer.from('a')), /already digested or dropped/);
  await t.rejects(inPlace.digest(), /already digested or dropped/);
});

/** CPU ticks (user + system) of each thread of this process, by thread id. */
function threadTicks(): Map<string, number> {
  const ticks = new Map<string, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    const fields = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    ticks.set(tid, Number(fields[11]) + Number(fields[12]));
  }
  return ticks;
}

t.test('the hashing runs on another thread than the caller', { skip: process.platform !== 'linux' && 'reads /proc' }, async (t) => {
  const chunk = randomBytes(MiB);
  const before = threadTicks();
  const hash = new Sha256();
  for (let i = 0; i < 256; i++) await hash.update(chunk);
  await hash.digest();
  const after = threadTicks();
  const used = (tid: string) => (after.get(tid) ?? 0) - (before.get(tid) ?? 0);
  const main = used(String(process.pid));
  const others = [...after.keys()].filter((tid) => tid !== String(process.pid)).reduce((sum, tid) => sum + used(tid), 0);
  // 256 MiB: seconds of hashing on a core without SHA instructions, against copies on the main thread.
  t.ok(others > main, `other threads used ${others} ticks, the main thread ${main}`);
});

t.test('a hash of a small known length runs on the caller\'s thread', { skip: process.platform !== 'linux' && 'reads /proc' }, async (t) => {
  const chunk = randomBytes(MiB);
  const before = threadTicks();
  // 256 MiB in hashes of 4 MiB, as 64 small uploads would be.
  for (let file = 0; file < 64; file++) {
    const hash = new Sha256(HASHED_IN_PLACE_LENGTH);
    for (let i = 0; i < 4; i++) hash.update(chunk);
    await hash.digest();
  }
  const after = threadTicks();
  const used = (tid: string) => (after.get(tid) ?? 0) - (before.get(tid) ?? 0);
  const main = used(String(process.pid));
  const others = [...after.keys()].filter((tid) => tid !== String(process.pid)).reduce((sum, tid) => sum + used(tid), 0);
  t.ok(main > others, `the main thread used ${main} ticks, the other threads ${others}`);
});
