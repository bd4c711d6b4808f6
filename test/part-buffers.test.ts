import t from 'tap';
import { randomBytes } from 'node:crypto';
import { PartAssembler, PartBuffers, PartSlots } from '../src/storage/part-buffers.js';

/** Lets every settled promise run its callbacks. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

t.test('a part slot taken while all are busy waits for one to be given back, first come first served', async (t) => {
  const slots = new PartSlots(2);
  await slots.acquire();
  await slots.acquire();
  const order: string[] = [];
  const third = slots.acquire().then(() => order.push('third'));
  const fourth = slots.acquire().then(() => order.push('fourth'));
  await settle();
  t.same(order, [], 'both wait while two parts are in flight');
  slots.release();
  await third;
  await settle();
  t.same(order, ['third'], 'one release lets one through');
  slots.release();
  await fourth;
  t.same(order, ['third', 'fourth']);
});

t.test('an assembler fills a part to its size and hands back the bytes that did not fit', (t) => {
  const buffers = new PartBuffers(10, new PartSlots(2));
  const part = new PartAssembler(buffers);
  const input = randomBytes(25);
  t.same(part.add(input.subarray(0, 4)), Buffer.alloc(0));
  t.notOk(part.full);
  const rest = part.add(input.subarray(4));
  t.ok(part.full);
  t.equal(rest.length, 15);
  const first = part.take();
  t.same(first.bytes, input.subarray(0, 10));
  t.equal(part.length, 0, 'a new part begins');
  t.same(part.add(rest), input.subarray(20));
  const second = part.take();
  t.same(second.bytes, input.subarray(10, 20), 'the first part is not overwritten while it is out');
  t.not(second.bytes.buffer, first.bytes.buffer, 'two parts out hold two buffers');
  first.done();
  part.add(input.subarray(20));
  const last = part.take();
  t.same(last.bytes, input.subarray(20), 'the last part is as long as its bytes');
  t.equal(last.bytes.buffer, first.bytes.buffer, 'a buffer given back is used again');
  second.done();
  last.done();
  t.end();
});

t.test('copy() keeps the bytes after the buffer went back; spares are kept only up to the slots', (t) => {
  const buffers = new PartBuffers(8, new PartSlots(1));
  const part = new PartAssembler(buffers);
  part.add(Buffer.from('abc'));
  const kept = part.copy();
  t.same(kept, Buffer.from('abc'));
  t.same(new PartAssembler(buffers).copy(), Buffer.alloc(0), 'an empty part is an empty body');
  const reuse = new PartAssembler(buffers);
  reuse.add(Buffer.from('xyz'));
  t.same(kept, Buffer.from('abc'), 'the copy is not the reused buffer');

  const a = buffers.take();
  const b = buffers.take();
  buffers.give(a);
  buffers.give(b);
  t.equal(buffers.take(), a, 'one spare for one slot');
  t.not(buffers.take(), b, 'the second was let go');
  t.end();
});

t.test('a part given back twice, or released unsent, returns its buffer once', (t) => {
  const buffers = new PartBuffers(4, new PartSlots(2));
  const part = new PartAssembler(buffers);
  part.add(Buffer.from('ab'));
  const body = part.take();
  body.done();
  body.done();
  const x = buffers.take();
  const y = buffers.take();
  t.not(x, y, 'the buffer was not put back twice');
  const unsent = new PartAssembler(buffers);
  unsent.add(Buffer.from('cd'));
  unsent.release();
  t.equal(unsent.length, 0);
  t.end();
});
