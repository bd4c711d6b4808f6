import t from 'tap';
import { randomBytes } from 'node:crypto';
import { PartAssembler, PartBuffers, PartSlots } from '../src/storage/s3/part-buffers.js';

/** Lets every settled promise run its callbacks. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

t.test('while every slot is taken, an upload that holds parts waits for one back; one that holds none goes on', async (t) => {
  const slots = new PartSlots(2);
  const busy = () => false;
  await slots.reserve(busy);
  await slots.reserve(busy);
  const order: string[] = [];
  const third = slots.reserve(busy).then(() => order.push('third'));
  const fourth = slots.reserve(busy).then(() => order.push('fourth'));
  await settle();
  t.same(order, [], 'uploads that hold parts wait while both slots are taken');
  await slots.reserve(() => true);
  t.pass('an upload that holds no part takes one at once, over the slots');
  slots.release();
  await settle();
  t.same(order, [], 'three taken, two slots: one back is not yet room');
  slots.release();
  await third;
  await settle();
  t.same(order, ['third'], 'room for one lets one through');
  slots.release();
  await fourth;
  t.same(order, ['third', 'fourth']);
});

t.test('a waiting upload goes on once it holds no part, though the slots are still taken', async (t) => {
  const slots = new PartSlots(1);
  let inFlight = 1;
  await slots.reserve(() => inFlight === 0);
  let reserved = false;
  const next = slots.reserve(() => inFlight === 0).then(() => (reserved = true));
  await settle();
  t.notOk(reserved, 'its part in flight holds the only slot');
  inFlight = 0;
  await slots.reserve(() => true);
  slots.release();
  await next;
  t.ok(reserved, 'woken by a buffer coming back, it finds itself idle');
});

t.test('an assembler fills a part to its size and hands back the bytes that did not fit', async (t) => {
  const buffers = new PartBuffers(10, new PartSlots(2));
  const part = new PartAssembler(buffers);
  const idle = () => true;
  const input = randomBytes(25);
  t.throws(() => part.add(input), /reserve\(\) first/, 'no bytes before the part has its buffer');
  await part.reserve(idle);
  t.same(part.add(input.subarray(0, 4)), Buffer.alloc(0));
  t.notOk(part.full);
  const rest = part.add(input.subarray(4));
  t.ok(part.full);
  t.equal(rest.length, 15);
  const first = part.take();
  t.same(first.bytes, input.subarray(0, 10));
  t.equal(part.length, 0, 'a new part begins');
  t.notOk(part.reserved, 'and needs a buffer of its own');
  await part.reserve(idle);
  t.same(part.add(rest), input.subarray(20));
  const second = part.take();
  t.same(second.bytes, input.subarray(10, 20), 'the first part is not overwritten while it is out');
  t.not(second.bytes.buffer, first.bytes.buffer, 'two parts out hold two buffers');
  first.done();
  await part.reserve(idle);
  part.add(input.subarray(20));
  const last = part.take();
  t.same(last.bytes, input.subarray(20), 'the last part is as long as its bytes');
  t.equal(last.bytes.buffer, first.bytes.buffer, 'a buffer given back is used again');
  second.done();
  last.done();
});

t.test('copy() keeps the bytes after the buffer went back; spares are kept only up to the slots', async (t) => {
  const buffers = new PartBuffers(8, new PartSlots(1));
  const idle = () => true;
  const part = new PartAssembler(buffers);
  await part.reserve(idle);
  part.add(Buffer.from('abc'));
  const kept = part.copy();
  t.same(kept, Buffer.from('abc'));
  t.same(new PartAssembler(buffers).copy(), Buffer.alloc(0), 'an empty part is an empty body');
  const reuse = new PartAssembler(buffers);
  await reuse.reserve(idle);
  reuse.add(Buffer.from('xyz'));
  t.same(kept, Buffer.from('abc'), 'the copy is not the reused buffer');
  reuse.release();

  const a = await buffers.take(idle);
  const b = await buffers.take(idle);
  buffers.give(a);
  buffers.give(b);
  t.equal(await buffers.take(idle), a, 'one spare for one slot');
  t.not(await buffers.take(idle), b, 'the second was let go');
});

t.test('a part given back twice, or released unsent, returns its buffer once', async (t) => {
  const slots = new PartSlots(2);
  const buffers = new PartBuffers(4, slots);
  const part = new PartAssembler(buffers);
  await part.reserve(() => true);
  part.add(Buffer.from('ab'));
  const body = part.take();
  body.done();
  body.done();
  const x = await buffers.take(() => true);
  const y = await buffers.take(() => true);
  t.not(x, y, 'the buffer was not put back twice');
  let third = false;
  const waiting = buffers.take(() => false).then(() => (third = true));
  await settle();
  t.notOk(third, 'and its slot was given back once: two buffers out fill both slots');
  buffers.give(x);
  await waiting;
  const unsent = new PartAssembler(buffers);
  await unsent.reserve(() => true);
  unsent.add(Buffer.from('cd'));
  unsent.release();
  t.equal(unsent.length, 0);
  t.notOk(unsent.reserved, 'its buffer went back');
});
