import t from 'tap';
import { startService } from './helpers/service.js';

interface OpenApiOperation {
  tags?: string[];
  parameters?: Array<{ name: string; in: string; required?: boolean; schema: { type: string } }>;
  requestBody?: { content: Record<string, { schema: { properties: Record<string, { type: string }>; required?: string[] } }> };
  responses: Record<string, { content?: Record<string, { schema: { oneOf?: Array<{ title: string; properties: Record<string, unknown> }> } }> }>;
}
type OpenApi = { openapi: string; paths: Record<string, Record<string, OpenApiOperation>> };

const FORM = 'application/x-www-form-urlencoded';

/** Every operation of the specification, with its parameters (name → type) and success fields. */
const OPERATIONS: Array<{ name: string; method: 'get' | 'post'; params: Record<string, string>; fields: string[] }> = [
  { name: 'AccessToken', method: 'post', params: { AppId: 'string', AppSecret: 'string' }, fields: ['AccessToken', 'DeadTime'] },
  // The token endpoint is not an operation of the specification's list: it has no …Try alias.
  { name: 'AccessToken', method: 'get', params: { AppId: 'string', AppSecret: 'string' }, fields: ['AccessToken', 'DeadTime'] },
  { name: 'DeleteApp', method: 'post', params: { AccessToken: 'string', AppId: 'string' }, fields: [] },
  { name: 'ViewMyBuckets', method: 'get', params: { AccessToken: 'string' }, fields: ['AppId', 'Buckets'] },
  {
    name: 'CreateBucket',
    method: 'post',
    params: { AccessToken: 'string', BucketName: 'string', OpenToRead: 'boolean', OpenToUpload: 'boolean' },
    fields: ['BucketId'],
  },
  {
    name: 'EditBucket',
    method: 'post',
    params: { AccessToken: 'string', BucketId: 'integer', NewBucketName: 'string', OpenToRead: 'boolean', OpenToUpload: 'boolean' },
    fields: [],
  },
  {
    name: 'ViewBucketDetail',
    method: 'get',
    params: { BucketId: 'integer' },
    fields: ['BucketId', 'BucketName', 'OpenToRead', 'OpenToUpload', 'BelongingAppId', 'FileCount'],
  },
  { name: 'DeleteBucket', method: 'post', params: { AccessToken: 'string', BucketId: 'integer' }, fields: [] },
  { name: 'ViewOneFile', method: 'get', params: { FileKey: 'integer' }, fields: ['File'] },
  { name: 'ViewMultiFiles', method: 'get', params: { Ids: 'string' }, fields: ['Items'] },
  { name: 'ViewAllFiles', method: 'get', params: { AccessToken: 'string', BucketId: 'integer' }, fields: ['BucketId', 'AllFiles'] },
  { name: 'DeleteFile', method: 'post', params: { AccessToken: 'string', FileKey: 'integer' }, fields: [] },
];

/** name → type of an operation's parameters: the query string of a GET, the form of a POST. */
function parametersOf(operation: OpenApiOperation, method: 'get' | 'post'): Record<string, string> {
  if (method === 'get') return Object.fromEntries((operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => [p.name, p.schema.type]));
  const form = operation.requestBody?.content[FORM]?.schema;
  return Object.fromEntries(Object.entries(form?.properties ?? {}).map(([name, schema]) => [name, schema.type]));
}

function successFields(operation: OpenApiOperation): string[] {
  const success = operation.responses['200']?.content?.['application/json']?.schema.oneOf?.find((s) => s.title === 'Success');
  return Object.keys(success?.properties ?? {});
}

t.test('/docs/json lists every operation of the specification with its parameters and answers', async (t) => {
  const service = await startService(t, { env: { ADMIN_KEY: 'admin-key-0123456789abcdef' } });
  const response = await service.app.inject({ url: '/docs/json' });
  t.equal(response.statusCode, 200);
  const spec = response.json() as OpenApi;
  t.match(spec.openapi, /^3\./);

  for (const { name, method, params, fields } of OPERATIONS) {
    const urls = method === 'get' && name !== 'AccessToken' ? [`/API/${name}`, `/API/${name}Try`] : [`/API/${name}`];
    for (const url of urls) {
      const operation = spec.paths[url]?.[method];
      if (!operation) {
        t.fail(`${method.toUpperCase()} ${url} is missing`);
        continue;
      }
      t.same(parametersOf(operation, method), params, `${method.toUpperCase()} ${url} parameters`);
      t.same(successFields(operation), ['Code', 'Message', ...fields], `${url} success fields`);
      t.ok(operation.tags?.length, `${url} is grouped`);
    }
  }

  const uploadFile = spec.paths['/API/UploadFile']?.post;
  t.same(
    uploadFile?.parameters?.map((p) => [p.name, p.in, p.required]),
    [
      ['AccessToken', 'query', false],
      ['BucketId', 'query', true],
      ['AliveDays', 'query', true],
    ],
  );
  const multipart = uploadFile?.requestBody?.content['multipart/form-data']?.schema;
  t.match(multipart, { properties: { File: { type: 'string', format: 'binary' } }, required: ['File'] }, 'UploadFile takes a File part');
  t.same(successFields(uploadFile!), ['Code', 'Message', 'FileKey', 'Path']);

  for (const url of ['/', '/health', '/ready', '/metrics']) t.ok(spec.paths[url]?.get, `GET ${url} is listed`);
  for (const name of ['CreateBucket', 'EditBucket', 'DeleteBucket', 'DeleteFile', 'DeleteApp', 'AccessToken']) {
    const body = spec.paths[`/API/${name}`]?.post?.requestBody?.content;
    t.same(Object.keys(body ?? {}), ['application/json', FORM], `POST /API/${name} takes JSON and forms`);
    t.same(body?.['application/json']?.schema, body?.[FORM]?.schema, 'of the same fields');
  }
  t.ok(spec.paths['/Admin/CreateApp']?.post, 'POST /Admin/CreateApp is listed');
  t.notOk(Object.keys(spec.paths).some((url) => url.startsWith('/docs')), 'the documentation does not list itself');
});

t.test('/docs serves the browsable description', async (t) => {
  const service = await startService(t);
  for (const url of ['/docs', '/docs/']) {
    const page = await service.app.inject({ url });
    t.equal(page.statusCode, 200, url);
    t.match(page.headers['content-type'], /^text\/html/);
    t.match(page.body, /swagger-ui/i);
    t.match(page.headers['content-security-policy'], /script-src 'self'/, 'its own policy lets its scripts run');
    t.notMatch(page.headers['content-security-policy'], /upgrade-insecure-requests/, 'and works over plain HTTP');
  }
  t.equal((await service.app.inject({ url: '/docs/static/swagger-ui.css' })).statusCode, 200);
});

t.test('the documented schemas are not enforced: binding keeps its own texts', async (t) => {
  const service = await startService(t);
  const response = await service.app.inject({ url: '/API/ViewBucketDetail?bucketid=abc&Extra=1' });
  t.same(response.json(), { Code: -10, Message: 'Your input contains several errors!', Items: ["The value 'abc' is not valid for BucketId."] });
});

interface DocumentedOperation {
  operationId?: string;
  deprecated?: boolean;
  tags?: string[];
  summary?: string;
  description?: string;
  security?: Array<Record<string, string[]>>;
  parameters?: Array<{ name: string; in: string; example?: unknown }>;
  requestBody?: { content: Record<string, { example?: unknown }> };
  responses: Record<string, { headers?: Record<string, unknown>; content?: Record<string, { example?: unknown; examples?: Record<string, { value: unknown }> }> }>;
}

t.test('/docs/json is good enough to generate a client from', async (t) => {
  const service = await startService(t, { env: { ADMIN_KEY: 'admin-key-0123456789abcdef' } });
  const spec = (await service.app.inject({ url: '/docs/json' })).json() as {
    paths: Record<string, Record<string, DocumentedOperation>>;
    components: { securitySchemes: Record<string, { type: string; scheme: string }> };
  };
  const operations = Object.entries(spec.paths).flatMap(([url, methods]) => Object.entries(methods).map(([method, operation]) => ({ url, method, operation })));

  const ids = operations.map(({ operation }) => operation.operationId);
  t.notOk(ids.includes(undefined), 'every operation has an operationId');
  t.same(ids.filter((id, index) => ids.indexOf(id) !== index), [], 'and no two share one');

  t.same(spec.components.securitySchemes.AccessToken, { type: 'http', scheme: 'bearer', description: String(spec.components.securitySchemes.AccessToken && (spec.components.securitySchemes.AccessToken as { description?: string }).description) });
  for (const { url, method, operation } of operations) {
    const takesToken = operation.parameters?.some((p) => p.name === 'AccessToken');
    if (takesToken) t.same(operation.security, [{ AccessToken: [] }], `${method} ${url} can take its token from Authorize`);

    const examples = [
      ...Object.values(operation.responses).flatMap((response) => Object.values(response.content ?? {}).map((media) => media.example ?? media.examples)),
      ...Object.values(operation.requestBody?.content ?? {}).map((media) => media.example),
      ...(operation.parameters ?? []).map((p) => p.example),
    ].filter((example) => example !== undefined);
    const bodiless = Object.values(operation.responses).every((response) => !response.content);
    t.ok(examples.length > 0 || bodiless, `${method.toUpperCase()} ${url} has examples`);
  }

  const aliases = operations.filter(({ url }) => url.startsWith('/API/') && url.endsWith('Try'));
  t.same(aliases.map(({ url }) => url).sort(), ['/API/ViewAllFilesTry', '/API/ViewBucketDetailTry', '/API/ViewMultiFilesTry', '/API/ViewMyBucketsTry', '/API/ViewOneFileTry']);
  for (const { url, operation } of aliases) {
    t.equal(operation.deprecated, true, `${url} is deprecated`);
    t.same(operation.tags, ['Try aliases'], `${url} is listed apart`);
  }
  t.notOk(operations.some(({ url, operation }) => !url.endsWith('Try') && operation.deprecated), 'nothing else is deprecated');

  const tus = operations.filter(({ url }) => url.startsWith('/API/ResumableUpload'));
  t.same(tus.map(({ url, method }) => `${method} ${url}`).sort(), [
    'delete /API/ResumableUpload/{id}',
    'head /API/ResumableUpload/{id}',
    'options /API/ResumableUpload',
    'options /API/ResumableUpload/{id}',
    'patch /API/ResumableUpload/{id}',
    'post /API/ResumableUpload',
  ]);
  const summaries = tus.map(({ operation }) => operation.summary);
  t.equal(new Set(summaries).size, tus.length, 'each tus request is described on its own');
  const header = (method: string, url: string, name: string) => spec.paths[url]?.[method]?.parameters?.some((p) => p.in === 'header' && p.name === name);
  t.ok(header('post', '/API/ResumableUpload', 'Upload-Length') && header('post', '/API/ResumableUpload', 'Upload-Metadata'), 'creation takes Upload-Length and Upload-Metadata');
  t.ok(header('patch', '/API/ResumableUpload/{id}', 'Upload-Offset'), 'a PATCH takes Upload-Offset');
  t.ok(spec.paths['/API/ResumableUpload']?.post?.responses['201']?.headers?.Location, 'creation answers a Location');
  t.ok(spec.paths['/API/ResumableUpload/{id}']?.patch?.responses['204']?.headers?.['Upload-File-Key'], 'the last PATCH answers the FileKey');
  t.ok(spec.paths['/API/ResumableUpload/{id}']?.patch?.requestBody?.content['application/offset+octet-stream'], 'PATCH bodies are offset+octet-stream');

  const secret = spec.paths['/Secret/Generate']?.get;
  t.same(secret?.parameters?.filter((p) => p.in === 'query').map((p) => p.name), ['AccessToken', 'Id', 'MaxUseTimes']);
  for (const url of ['/Download/FromKey/{key}', '/Download/FromSecret', '/{bucket}/{file}']) {
    t.ok(header('get', url, 'Range'), `${url} takes Range`);
    t.ok(spec.paths[url]?.get?.responses['206'] && spec.paths[url]?.get?.responses['416'], `${url} answers ranges`);
    t.ok(spec.paths[url]?.head, `${url} answers HEAD`);
  }
});
