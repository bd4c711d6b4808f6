import t from 'tap';
import { decide, parseRange } from '../src/http/ranges.js';

const file = { size: 1000, etag: '"abc"', lastModified: new Date('2026-11-20T10:04:05.123Z') };

t.test('ranges per RFC 9110', async (t) => {
  t.same(parseRange('bytes=0-9', 1000), { start: 0, end: 9 });
  t.same(parseRange('bytes=5-', 1000), { start: 5, end: 999 });
  t.same(parseRange('bytes=-100', 1000), { start: 900, end: 999 });
  t.same(parseRange('bytes=-5000', 1000), { start: 0, end: 999 }, 'a suffix longer than the file selects all of it');
  t.same(parseRange('bytes=990-2000', 1000), { start: 990, end: 999 }, 'an end past the file is cut to it');
  t.same(parseRange('bytes = 0-5, 3-9', 1000), { start: 0, end: 9 }, 'overlapping ranges merge');
  t.same(parseRange('bytes=0-4,5-9', 1000), { start: 0, end: 9 }, 'touching ranges merge');
  t.equal(parseRange('bytes=0-1,5-6', 1000), undefined, 'ranges apart: the whole file');
  t.equal(parseRange('bytes=1000-', 1000), null, 'past the end: unsatisfiable');
  t.equal(parseRange('bytes=-0', 1000), null, 'an empty suffix: unsatisfiable');
  t.equal(parseRange('bytes=0-', 0), null, 'nothing of an empty file');
  t.same(parseRange('bytes=1000-,0-0', 1000), { start: 0, end: 0 }, 'the satisfiable one of several');
  for (const bad of ['items=0-5', 'bytes=5-3', 'bytes=a-b', 'bytes=', 'bytes=-', 'bytes=1-2-3', '0-5']) {
    t.equal(parseRange(bad, 1000), undefined, `${bad}: does not parse, so ignored`);
  }
});

t.test('preconditions in RFC 9110 order, then the range', async (t) => {
  const modified = file.lastModified.toUTCString();
  const earlier = new Date(file.lastModified.getTime() - 60_000).toUTCString();
  t.same(decide({}, file), { status: 200 });
  t.same(decide({ 'if-none-match': '"abc"' }, file), { status: 304 });
  t.same(decide({ 'if-none-match': 'W/"abc"' }, file), { status: 304 }, 'weak comparison');
  t.same(decide({ 'if-none-match': '"x", "abc"' }, file), { status: 304 });
  t.same(decide({ 'if-none-match': '*' }, file), { status: 304 });
  t.same(decide({ 'if-none-match': '"x"', 'if-modified-since': modified }, file), { status: 200 }, 'If-None-Match wins over If-Modified-Since');
  t.same(decide({ 'if-modified-since': modified }, file), { status: 304 });
  t.same(decide({ 'if-modified-since': earlier }, file), { status: 200 });
  t.same(decide({ 'if-modified-since': 'not a date' }, file), { status: 200 });
  t.same(decide({ 'if-match': '"x"' }, file), { status: 412 });
  t.same(decide({ 'if-match': 'W/"abc"' }, file), { status: 412 }, 'strong comparison');
  t.same(decide({ 'if-match': '"abc"', range: 'bytes=0-0' }, file), { status: 206, range: { start: 0, end: 0 } });
  t.same(decide({ 'if-unmodified-since': earlier }, file), { status: 412 });
  t.same(decide({ 'if-unmodified-since': modified }, file), { status: 200 });
  t.same(decide({ range: 'bytes=2000-' }, file), { status: 416 });
  t.same(decide({ range: 'bytes=0-9', 'if-range': '"abc"' }, file), { status: 206, range: { start: 0, end: 9 } });
  t.same(decide({ range: 'bytes=0-9', 'if-range': '"old"' }, file), { status: 200 }, 'a changed file: the whole of it');
  t.same(decide({ range: 'bytes=0-9', 'if-range': modified }, file), { status: 206, range: { start: 0, end: 9 } });
  t.same(decide({ range: 'bytes=0-9', 'if-range': earlier }, file), { status: 200 });
});
