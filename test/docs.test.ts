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
      ['AccessToken', 'query', true],
      ['BucketId', 'query', true],
      ['AliveDays', 'query', true],
    ],
  );
  const multipart = uploadFile?.requestBody?.content['multipart/form-data']?.schema;
  t.match(multipart, { properties: { File: { type: 'string', format: 'binary' } }, required: ['File'] }, 'UploadFile takes a File part');
  t.same(successFields(uploadFile!), ['Code', 'Message', 'FileKey', 'Path']);

  for (const url of ['/', '/health', '/ready', '/metrics']) t.ok(spec.paths[url]?.get, `GET ${url} is listed`);
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
