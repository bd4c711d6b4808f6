import t from 'tap';
import { DOWNLOADS, OPERATIONS, RESUMABLE, type OperationSpec, type Param, type Shape } from '../packages/client/src/index.js';
import { startService } from './helpers/service.js';

/**
 * The SDK's description of the API (the table its methods call, its argument checks and its result
 * types are made from) against the service's OpenAPI document, both ways: an operation, parameter
 * or answer field that changes on one side fails here until the other follows.
 */

interface Schema {
  type?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  oneOf?: Array<Schema & { title?: string }>;
}
interface Operation {
  operationId: string;
  deprecated?: boolean;
  security?: Array<Record<string, string[]>>;
  parameters?: Array<{ name: string; in: string; required: boolean; schema: Schema }>;
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}
type Document = { paths: Record<string, Record<string, Operation>> };

/** A parameter as the document says it, in the SDK's terms. */
function asParam(schema: Schema, required: boolean): Param {
  const kind = schema.type === 'string' ? 'text' : (schema.type as Param['kind']);
  return {
    kind,
    required,
    ...(schema.minimum !== undefined ? { minimum: schema.minimum } : {}),
    ...(schema.maximum !== undefined ? { maximum: schema.maximum } : {}),
    ...(schema.maxLength !== undefined ? { maxLength: schema.maxLength } : {}),
  };
}

/** A field of an answer as the document says it, in the SDK's terms. */
function asShape(schema: Schema): Shape {
  if (schema.type === 'string') return schema.format === 'date-time' ? { type: 'date-time' } : { type: 'string' };
  if (schema.type === 'array') return { type: 'array', items: asShape(schema.items!) };
  if (schema.type === 'object') {
    const fields = Object.fromEntries(Object.entries(schema.properties ?? {}).map(([name, field]) => [name, asShape(field)]));
    // Every field of an answer is always there: the SDK's types make none optional.
    if ([...(schema.required ?? [])].sort().join() !== Object.keys(fields).sort().join()) throw new Error(`optional fields in ${JSON.stringify(schema)}`);
    return { type: 'object', fields };
  }
  return { type: schema.type as 'integer' | 'boolean' };
}

/** The SDK's parameters as the document lists them: the AccessToken is the security scheme's. */
function documentedParams(operation: Operation, method: string): { params: Record<string, Param>; takesToken: boolean } {
  const query = (operation.parameters ?? []).filter((p) => p.in === 'query').map((p): [string, Param] => [p.name, asParam(p.schema, p.required)]);
  const body = method === 'post' ? operation.requestBody?.content['application/json']?.schema : undefined;
  // POST operations take JSON objects; UploadFile its parameters in the query string beside the multipart file.
  const entries = body ? Object.entries(body.properties ?? {}).map(([name, field]): [string, Param] => [name, asParam(field, (body.required ?? []).includes(name))]) : query;
  const params = Object.fromEntries(entries.filter(([name]) => name !== 'AccessToken'));
  return { params, takesToken: entries.some(([name]) => name === 'AccessToken') };
}

function successFields(operation: Operation): Record<string, Shape> {
  const success = operation.responses['200']?.content?.['application/json']?.schema.oneOf?.find((schema) => schema.title === 'Success');
  const { Code, Message, ...fields } = success?.properties ?? {};
  void Code;
  void Message;
  return Object.fromEntries(Object.entries(fields).map(([name, schema]) => [name, asShape(schema)]));
}

t.test('the SDK and /docs/json describe the same API', async (t) => {
  const service = await startService(t);
  const document = (await service.app.inject({ url: '/docs/json' })).json() as Document;
  const byId = new Map(Object.entries(document.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => [operation.operationId, { path, method, operation }] as const)));

  for (const [name, spec] of Object.entries(OPERATIONS) as Array<[string, OperationSpec]>) {
    const documented = byId.get(name);
    if (!documented) {
      t.fail(`${name} is not in /docs/json`);
      continue;
    }
    const { path, method, operation } = documented;
    t.equal(`${method.toUpperCase()} ${path}`, `${spec.method} ${spec.path}`, `${name}: method and path`);
    t.notOk(operation.deprecated, `${name} is not deprecated`);
    const { params, takesToken } = documentedParams(operation, method);
    t.same(params, spec.params, `${name}: parameters, their types, ranges and whether they are required`);
    t.equal(takesToken, spec.auth === 'token', `${name}: takes an AccessToken`);
    if (spec.auth === 'token') t.same(operation.security, [{ AccessToken: [] }], `${name}: as the bearer scheme`);
    t.same(successFields(operation), spec.result, `${name}: the fields of its answer`);
  }

  // The other way round: every operation the document lists for clients is one the SDK calls.
  const called = new Set([
    ...Object.keys(OPERATIONS),
    ...Object.keys(DOWNLOADS).flatMap((name) => [name, `${name}Head`]),
    'CreateResumableUpload',
    'ResumableUploadOffset',
    'ResumableUploadBytes',
    'ResumableUploadTerminate',
  ]);
  // What the SDK leaves to others: the GET form of the token endpoint (it POSTs), the tus
  // capability probes, the service's probes, the operator's routes and the console's page.
  const elsewhere = new Set(['AccessTokenByQuery', 'ResumableUploadOptions', 'ResumableUploadUrlOptions', 'Welcome', 'Health', 'Ready', 'Metrics', 'CreateApp', 'Console']);
  const uncovered = [...byId.entries()].filter(([id, { operation }]) => !operation.deprecated && !called.has(id) && !elsewhere.has(id)).map(([id]) => id);
  t.same(uncovered, [], 'no documented operation is missing from the SDK');

  for (const [name, route] of Object.entries(DOWNLOADS)) {
    for (const method of ['get', 'head']) {
      const operation = document.paths[route.path]?.[method];
      t.ok(operation, `${method.toUpperCase()} ${route.path}`);
      const parameters = operation?.parameters ?? [];
      for (const query of route.query) t.ok(parameters.some((p) => p.in === 'query' && p.name === query), `${name}: query ${query}`);
      for (const header of route.headers) t.ok(parameters.some((p) => p.in === 'header' && p.name === header), `${name}: header ${header}`);
    }
    t.ok(document.paths[route.path]?.get?.responses['206'], `${name} answers ranges`);
  }

  for (const step of [RESUMABLE.create, RESUMABLE.offset, RESUMABLE.bytes, RESUMABLE.terminate]) {
    const path = step === RESUMABLE.create ? RESUMABLE.path : `${RESUMABLE.path}/{id}`;
    const parameters = document.paths[path]?.[step.method]?.parameters ?? [];
    for (const header of step.headers) t.ok(parameters.some((p) => p.in === 'header' && p.name === header), `${step.method.toUpperCase()} ${path}: ${header}`);
  }
});
