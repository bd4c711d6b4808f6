import fc from 'fast-check';
import t from 'tap';
import { bindParameters, field, MAX_ID } from '../src/http/binding.js';
import { ApiError } from '../src/errors.js';
import { parseIds } from '../src/http/files.js';
import { MAX_FILE_NAME_BYTES, sanitizeFileName } from '../src/services/file-names.js';

const RUNS = { numRuns: 500 };
const spec = {
  AccessToken: field.text({ maxLength: 128 }),
  BucketId: field.integer({ minimum: 1, maximum: MAX_ID }),
  OpenToRead: field.boolean(),
};

/** Any casing of a name: real clients send `accesstoken`, `ACCESSTOKEN`, `accessToken`… */
const casingOf = (name: string) =>
  fc.array(fc.boolean(), { minLength: name.length, maxLength: name.length }).map((upper) =>
    [...name].map((c, i) => (upper[i] ? c.toUpperCase() : c.toLowerCase())).join(''),
  );

function outcome(run: () => unknown): { ok: unknown } | { items: readonly string[] } {
  try {
    return { ok: run() };
  } catch (error) {
    if (error instanceof ApiError && error.code === -10 && error.items && error.items.length > 0) return { items: error.items };
    throw error; // anything else is a defect: binding must only ever refuse with -10
  }
}

t.test('binding ignores the casing of parameter names', async () => {
  fc.assert(
    fc.property(
      casingOf('AccessToken'),
      casingOf('BucketId'),
      casingOf('OpenToRead'),
      fc.string({ minLength: 1, maxLength: 128 }).filter((s) => s.trim() !== ''),
      fc.integer({ min: 1, max: MAX_ID }),
      fc.boolean(),
      (tokenName, idName, flagName, token, id, flag) => {
        const bound = bindParameters(spec, { [tokenName]: token, [idName]: String(id), [flagName]: flag ? 'TRUE' : 'false' });
        return bound.AccessToken === token && bound.BucketId === id && bound.OpenToRead === flag;
      },
    ),
    RUNS,
  );
});

t.test('an integer field takes exactly the decimal integers in range, and refuses the rest with one item', async () => {
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.integer().map(String), fc.double().map(String), fc.bigInt().map(String)), (raw) => {
      const result = outcome(() => bindParameters({ BucketId: spec.BucketId }, { BucketId: raw }));
      const trimmed = raw.trim();
      const expected = /^-?\d+$/.test(trimmed) && Number.isSafeInteger(Number(trimmed)) && Number(trimmed) >= 1;
      if ('ok' in result) return expected && (result.ok as { BucketId: number }).BucketId === Number(trimmed);
      return !expected && result.items.length === 1;
    }),
    RUNS,
  );
});

t.test('any query object binds or is refused with -10, never anything else', async () => {
  fc.assert(
    fc.property(fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.array(fc.string()), fc.constant(undefined))), (query) => {
      outcome(() => bindParameters(spec, query));
      return ({} as Record<string, unknown>).polluted === undefined;
    }),
    RUNS,
  );
});

const hidden = /[\p{Cc}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;

t.test('a sanitized file name is one safe segment of at most 255 bytes, and sanitizing again changes nothing', async () => {
  const nameParts = fc.oneof(
    fc.string({ unit: 'grapheme' }),
    fc.constantFrom('/', '\\', '..', '.', '\u0000', '\u202E', '\u2066', '\u200F', '\r\n', 'e\u0301', '％２ｅ', '．．／'),
    fc.string({ unit: 'binary' }),
  );
  fc.assert(
    fc.property(fc.array(nameParts, { maxLength: 40 }).map((parts) => parts.join('')), (clientName) => {
      const name = sanitizeFileName(clientName);
      if (name === undefined) return true;
      return (
        !name.includes('/') &&
        !name.includes('\\') &&
        !hidden.test(name) &&
        name !== '.' &&
        name !== '..' &&
        name.trim() !== '' &&
        Buffer.byteLength(name, 'utf8') <= MAX_FILE_NAME_BYTES &&
        name === name.normalize('NFC') &&
        sanitizeFileName(name) === name
      );
    }),
    RUNS,
  );
});

t.test('Ids: any list of keys with blanks around and between parses to the keys in order', async () => {
  const blank = fc.constantFrom('', ' ', '  ', '\t');
  fc.assert(
    fc.property(
      fc.array(fc.tuple(blank, fc.integer({ min: 1, max: MAX_ID }), blank), { maxLength: 1000 }),
      fc.array(blank, { maxLength: 5 }),
      (entries, empties) => {
        const raw = [...entries.map(([a, id, b]) => `${a}${id}${b}`), ...empties].join(',');
        const parsed = parseIds(raw);
        return parsed.length === entries.length && parsed.every((id, i) => id === entries[i][1]);
      },
    ),
    { numRuns: 200 },
  );
});

t.test('Ids: arbitrary text parses or is refused with -10, never anything else', async () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 200 }), (raw) => {
      const result = outcome(() => parseIds(raw));
      return 'items' in result || (result.ok as number[]).every((id) => Number.isSafeInteger(id) && id >= 1);
    }),
    RUNS,
  );
});
