import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { bindRequest, type Bound, type Field, type Source, type Spec } from './binding.js';
import './route-config.js';

export type JsonSchema = Record<string, unknown>;

const FORM = 'application/x-www-form-urlencoded';
const JSON_BODY = 'application/json';
const JSON_TYPE = 'application/json; charset=utf-8';

/** The name of the bearer security scheme of /docs that carries an AccessToken (see openapi.ts). */
export const ACCESS_TOKEN_SCHEME = 'AccessToken';
/** The tag under which /docs lists the deprecated `…Try` aliases, folded away. */
export const TRY_ALIASES_TAG = 'Try aliases';

function fieldSchema({ kind, minimum, maximum, maxLength, description }: Field<unknown>, example: unknown): JsonSchema {
  const schema: JsonSchema = { type: kind === 'text' ? 'string' : kind };
  if (minimum !== undefined) schema.minimum = minimum;
  if (maximum !== undefined) schema.maximum = maximum;
  if (maxLength !== undefined) schema.maxLength = maxLength;
  if (description !== undefined) schema.description = description;
  if (example !== undefined) schema.examples = [example];
  return schema;
}

/**
 * The JSON schema of a parameter spec (plus `extra` required properties), for /docs. The
 * AccessToken is documented as a parameter but not required by it: the AccessToken security
 * scheme (`Authorization: Bearer`) is the other way to send it. `examples` gives each parameter's.
 */
export function parametersSchema(spec: Spec, extra: Record<string, JsonSchema> = {}, examples: Record<string, unknown> = {}): JsonSchema {
  const names = Object.keys(spec);
  return {
    type: 'object',
    properties: { ...Object.fromEntries(names.map((name) => [name, fieldSchema(spec[name]!, examples[name])])), ...extra },
    required: [...names.filter((name) => spec[name]!.required && name !== 'AccessToken'), ...Object.keys(extra)],
  };
}

/** The security of an operation that takes an AccessToken, for /docs. */
export const tokenSecurity = (spec: Spec): JsonSchema => ('AccessToken' in spec ? { security: [{ [ACCESS_TOKEN_SCHEME]: [] }] } : {});

const refusal = (code: number, title: string, items: boolean): JsonSchema => ({
  type: 'object',
  title,
  properties: {
    Code: { type: 'integer', enum: [code] },
    Message: { type: 'string' },
    ...(items ? { Items: { type: 'array', items: { type: 'string' }, description: 'One text per invalid input.' } } : {}),
  },
  required: ['Code', 'Message', ...(items ? ['Items'] : [])],
});

const REFUSAL_EXAMPLES = {
  invalidInput: { summary: 'Invalid input (Code -10)', value: { Code: -10, Message: 'Your input contains several errors!', Items: ['The BucketId field is required.'] } },
  failure: { summary: 'Refused (Code -1)', value: { Code: -1, Message: 'Invalid or expired AccessToken.' } },
};

/**
 * The responses of an operation, for /docs: success (Code 0 with `fields`) and the protocol's
 * refusals all come with HTTP 200; transport-level failures carry their status and the envelope.
 * `example` is a success body (its Message included), shown beside a refusal of each kind.
 */
export function envelopeResponses(fields: Record<string, JsonSchema> = {}, example?: Record<string, unknown>): Record<string, JsonSchema> {
  const success: JsonSchema = {
    type: 'object',
    title: 'Success',
    properties: { Code: { type: 'integer', enum: [0] }, Message: { type: 'string' }, ...fields },
    required: ['Code', 'Message', ...Object.keys(fields)],
  };
  const examples = example ? { success: { summary: 'Success (Code 0)', value: { ...example, Code: 0 } }, ...REFUSAL_EXAMPLES } : undefined;
  return {
    200: {
      description: 'Code 0 with the fields of the operation; or a refusal, also with HTTP 200: Code -1 with a Message, or Code -10 with Items.',
      content: {
        'application/json': {
          schema: { oneOf: [success, refusal(-1, 'Failure', false), refusal(-10, 'Invalid input', true)] },
          ...(examples ? { examples } : {}),
        },
      },
    },
    default: {
      description: 'Transport-level failure with the envelope: 404, 413, 415, 429 (with Retry-After), 500, 503 or 507.',
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: { Code: { type: 'integer', enum: [-1, -10] }, Message: { type: 'string' }, Items: { type: 'array', items: { type: 'string' } } },
            required: ['Code', 'Message'],
          },
          example: { Code: -1, Message: 'The service is overloaded right now; try again shortly.' },
        },
      },
    },
  };
}

export interface Operation<S extends Spec> {
  /** The operation name under /API/, e.g. `ViewMyBuckets`. */
  name: string;
  /** GET operations of the specification; `['GET', 'POST']` for the token endpoint, which takes both. */
  method: 'GET' | 'POST' | ReadonlyArray<'GET' | 'POST'>;
  params: S;
  summary: string;
  /** The group it is listed under in /docs. */
  tag?: string;
  /** The fields of a success body besides Code and Message, for /docs. */
  response?: Record<string, JsonSchema>;
  /**
   * For /docs: the parameters of a typical request (the AccessToken left out: /docs sends it in
   * its header, and an example value would clash with it) and its success answer with its Message.
   */
  example: { request: Record<string, unknown>; response: Record<string, unknown> };
  /** Route config. */
  config?: Record<string, unknown>;
  /** Runs first on each of the operation's routes, e.g. one rate limit shared by all its methods. */
  onRequest?: onRequestAsyncHookHandler;
  /** The success body's fields and Message; or, for a long answer, its whole JSON text as a stream. */
  handler: (params: Bound<S>, request: FastifyRequest, reply: FastifyReply) => Promise<Record<string, unknown> | Readable>;
}

/**
 * Registers an /API operation: GET operations also answer under their `…Try` name; parameters are
 * bound before the handler runs; the handler's result (which carries its Message) gets Code 0.
 * Route schemas only describe the operation for /docs: the context the operations are registered
 * in (the api-binding plugin) leaves validation to the binding.
 */
export function defineOperation<S extends Spec>(fastify: FastifyInstance, operation: Operation<S>): void {
  const urls = [`/API/${operation.name}`];
  if (operation.method === 'GET') urls.push(`/API/${operation.name}Try`);
  const methods = typeof operation.method === 'string' ? [operation.method] : operation.method;
  const { example } = operation;
  const parameters = parametersSchema(operation.params, {}, example.request);
  const body = { ...parametersSchema(operation.params), examples: [example.request] };
  const docs = (method: 'GET' | 'POST', url: string) => {
    const alias = url.endsWith('Try');
    // One operationId per method: the token endpoint answers both.
    const operationId = `${operation.name}${alias ? 'Try' : ''}${methods.length > 1 && method === 'GET' ? 'ByQuery' : ''}`;
    return {
      operationId,
      summary: alias ? `Deprecated alias of GET /API/${operation.name}.` : operation.summary,
      ...(alias
        ? { description: `The specification lists the GET operations under their name with Try appended; /API/${operation.name} is the same operation.`, deprecated: true, tags: [TRY_ALIASES_TAG] }
        : operation.tag
          ? { tags: [operation.tag] }
          : {}),
      ...tokenSecurity(operation.params),
      ...(method === 'GET' ? { querystring: parameters } : { body: { content: { [JSON_BODY]: { schema: body }, [FORM]: { schema: body } } } }),
      response: envelopeResponses(operation.response, example.response),
    };
  };
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const params =
      request.method === 'POST'
        ? bindRequest(operation.params, request.headers, request.query as Source, request.body as Source)
        : bindRequest(operation.params, request.headers, request.query as Source);
    const result = await operation.handler(params, request, reply);
    if (result instanceof Readable) return reply.type(JSON_TYPE).send(result);
    return { ...result, Code: 0 };
  };
  for (const method of methods) {
    for (const url of urls) {
      fastify.route({
        method,
        url,
        config: { ...operation.config, operation: operation.name },
        ...(operation.onRequest ? { onRequest: operation.onRequest } : {}),
        schema: docs(method, url),
        handler,
      });
    }
  }
}
