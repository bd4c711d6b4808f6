import Fastify from 'fastify';
import t from 'tap';
import envelopePlugin from '../plugins/envelope.js';
import apiBindingPlugin from '../plugins/api-binding.js';
import { bindParameters, field, MAX_ID } from '../src/http/binding.js';
import { defineOperation } from '../src/http/operation.js';
import { ApiError } from '../src/errors.js';

const spec = {
  AccessToken: field.text({ maxLength: 20 }),
  BucketId: field.integer({ minimum: 1, maximum: MAX_ID }),
  OpenToRead: field.boolean(),
  AliveDays: field.optionalInteger({ minimum: 1, maximum: 18250, default: 30 }),
};

function itemsOf(fn: () => unknown): readonly string[] | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof ApiError) return error.items;
    throw error;
  }
  return undefined;
}

t.test('names match case-insensitively and values are typed', async (t) => {
  const bound = bindParameters(spec, { accesstoken: 'abc', BUCKETID: '12', openToRead: 'TRUE' });
  t.same(bound, { AccessToken: 'abc', BucketId: 12, OpenToRead: true, AliveDays: 30 });
  t.equal(bindParameters(spec, { AccessToken: 'a', BucketId: '1', OpenToRead: 'False' }).OpenToRead, false);
});

t.test('a later source wins: the form body over the query string', async (t) => {
  const bound = bindParameters(spec, { AccessToken: 'query', BucketId: '1', OpenToRead: 'true' }, { accessToken: 'body' });
  t.equal(bound.AccessToken, 'body');
  t.equal(bound.BucketId, 1);
});

t.test('every invalid input is reported at once, with the texts clients know', async (t) => {
  const items = itemsOf(() => bindParameters(spec, { BucketId: 'abc', OpenToRead: 'yes', AliveDays: '0' }));
  t.same(items, [
    'The AccessToken field is required.',
    "The value 'abc' is not valid for BucketId.",
    "The value 'yes' is not valid for OpenToRead.",
    'The field AliveDays must be between 1 and 18250.',
  ]);
});

t.test('numbers are decimal integers only', async (t) => {
  for (const bad of ['1.5', '1e3', '0x10', '+1', '', ' ', '12abc', '99999999999999999999', 'NaN', 'Infinity']) {
    const items = itemsOf(() => bindParameters(spec, { AccessToken: 'a', BucketId: bad, OpenToRead: 'true' }));
    t.equal(items?.length, 1, `BucketId=${JSON.stringify(bad)} is refused`);
  }
  t.same(itemsOf(() => bindParameters(spec, { AccessToken: 'a', BucketId: '-3', OpenToRead: 'true' })), [
    `The field BucketId must be between 1 and ${MAX_ID}.`,
  ]);
  t.equal(bindParameters(spec, { AccessToken: 'a', BucketId: ' 007 ', OpenToRead: 'true' }).BucketId, 7);
});

t.test('text longer than its limit is refused', async (t) => {
  t.same(itemsOf(() => bindParameters(spec, { AccessToken: 'x'.repeat(21), BucketId: '1', OpenToRead: 'true' })), [
    'The field AccessToken must be a string with a maximum length of 20.',
  ]);
});

t.test('a parameter given twice in one source is ambiguous', async (t) => {
  t.same(itemsOf(() => bindParameters(spec, { AccessToken: 'a', accesstoken: 'b', BucketId: '1', OpenToRead: 'true' })), [
    'The AccessToken field was given more than once.',
  ]);
  t.same(itemsOf(() => bindParameters(spec, { AccessToken: 'a', BucketId: ['1', '2'], OpenToRead: 'true' })), [
    'The BucketId field was given more than once.',
  ]);
});

t.test('odd parameter names change nothing', async (t) => {
  const query = JSON.parse('{"__proto__": {"polluted": "yes"}, "constructor": "x", "AccessToken": "a", "BucketId": "1", "OpenToRead": "true"}');
  const bound = bindParameters(spec, query);
  t.equal(bound.AccessToken, 'a');
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype is untouched');
  t.equal(Object.getPrototypeOf(bound), Object.prototype);
  t.same(itemsOf(() => bindParameters({ constructor: field.text() }, {})), ['The constructor field is required.']);
});

t.test('operations answer on their …Try alias and on any casing of the path', async (t) => {
  const fastify = Fastify({ routerOptions: { caseSensitive: false } });
  await fastify.register(envelopePlugin);
  await fastify.register(apiBindingPlugin);
  defineOperation(fastify, {
    name: 'Echo',
    method: 'GET',
    summary: 'test',
    params: { BucketId: field.integer({ minimum: 1, maximum: 10 }) },
    example: { request: { BucketId: 3 }, response: { BucketId: 3, Message: 'ok' } },
    handler: async ({ BucketId }) => ({ BucketId, Message: 'ok' }),
  });
  defineOperation(fastify, {
    name: 'Change',
    method: 'POST',
    summary: 'test',
    params: { BucketId: field.integer({ minimum: 1, maximum: 10 }), OpenToRead: field.boolean() },
    example: { request: { BucketId: 4, OpenToRead: true }, response: { BucketId: 4, OpenToRead: true, Message: 'changed' } },
    handler: async (params) => ({ ...params, Message: 'changed' }),
  });
  t.teardown(() => fastify.close());

  for (const url of ['/API/Echo?BucketId=3', '/API/EchoTry?bucketid=3', '/api/echotry?BUCKETID=3', '/Api/ECHO?BucketId=3']) {
    const response = await fastify.inject({ url });
    t.equal(response.statusCode, 200, url);
    t.same(response.json(), { BucketId: 3, Message: 'ok', Code: 0 }, url);
  }
  const invalid = await fastify.inject({ url: '/API/Echo?BucketId=11' });
  t.equal(invalid.statusCode, 200);
  t.same(invalid.json(), {
    Code: -10,
    Message: 'Your input contains several errors!',
    Items: ['The field BucketId must be between 1 and 10.'],
  });

  const post = await fastify.inject({
    method: 'POST',
    url: '/api/change?BucketId=4&OpenToRead=false',
    payload: 'openToRead=True',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.same(post.json(), { BucketId: 4, OpenToRead: true, Message: 'changed', Code: 0 }, 'form body merged over the query');
  t.equal((await fastify.inject({ method: 'POST', url: '/API/ChangeTry' })).statusCode, 404, 'POST operations have no …Try alias');
});

t.test('the legacy binding holds only in its own context; other routes keep Fastify validation and serialization', async (t) => {
  const fastify = Fastify({ routerOptions: { caseSensitive: false } });
  await fastify.register(envelopePlugin);
  const querystring = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
  const response = { 200: { type: 'object', properties: { n: { type: 'integer' } } } };
  fastify.get('/plain', { schema: { querystring, response } }, async (request) => ({ ...(request.query as object), extra: 'dropped by the serializer' }));
  fastify.post('/plain-json', async (request) => ({ echoed: request.body }));
  await fastify.register(async (api) => {
    await api.register(apiBindingPlugin);
    api.get('/API/Legacy', { schema: { querystring, response } }, async (request) => ({ ...(request.query as object), extra: 'kept' }));
    api.post('/API/LegacyPost', async (request) => ({ body: request.body }));
  });
  t.teardown(() => fastify.close());

  const plain = await fastify.inject({ url: '/plain?n=abc' });
  t.equal(plain.statusCode, 400, 'Ajv refuses a bad value outside the /API context');
  t.same((await fastify.inject({ url: '/plain?n=7' })).json(), { n: 7 }, 'and the response schema shapes the reply');
  const json = await fastify.inject({ method: 'POST', url: '/plain-json', payload: { a: 1 } });
  t.same(json.json(), { echoed: { a: 1 } }, 'JSON bodies are read outside the /API context');

  t.same((await fastify.inject({ url: '/API/Legacy?n=abc' })).json(), { n: 'abc', extra: 'kept' }, 'inside it, the schema neither validates nor shapes');
  t.same((await fastify.inject({ method: 'POST', url: '/API/LegacyPost', payload: { a: 1 } })).json(), { body: { a: 1 } }, 'JSON objects are fields there too');
  const refused = await fastify.inject({ method: 'POST', url: '/API/LegacyPost', payload: 'a=1', headers: { 'content-type': 'text/plain' } });
  t.equal(refused.statusCode, 415, 'plain text is not part of the protocol');
  t.equal(refused.json().Code, -10);
  const form = await fastify.inject({ method: 'POST', url: '/API/LegacyPost', payload: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  t.same(form.json(), { body: { a: '1' } }, 'form bodies are');
});
