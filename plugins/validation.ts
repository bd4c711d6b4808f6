import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { invalidInput } from '../src/errors.js';

/**
 * Parameter binding as the original clients expect it: names match case-insensitively, GET reads
 * the query string, POST reads the query string and the form body (the body wins), and every
 * invalid input is reported at once in Items with the texts those clients know.
 */

type Raw = string | undefined;
type Outcome<T> = { ok: true; value: T } | { ok: false; message: string };

export interface Field<T> {
  readonly kind: 'text' | 'integer' | 'boolean';
  readonly required: boolean;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly maxLength?: number;
  readonly description?: string;
  bind(raw: Raw, name: string): Outcome<T>;
}

export type Spec = Record<string, Field<unknown>>;
export type Bound<S extends Spec> = { [K in keyof S]: S[K] extends Field<infer T> ? T : never };

const required = (name: string) => `The ${name} field is required.`;
const notValid = (raw: string, name: string) => {
  // Echo a short, printable form of the value: enough to recognise it, never a wall of text.
  const shown = raw.replace(/[\p{Cc}\p{Cf}]/gu, '').slice(0, 40);
  return `The value '${shown}${raw.length > 40 ? '…' : ''}' is not valid for ${name}.`;
};
const isBlank = (raw: Raw): raw is undefined => raw === undefined || raw.trim() === '';

interface TextOptions {
  maxLength?: number;
  description?: string;
  /** Further rules; returns the message for the Items array, or undefined when the value is fine. */
  check?: (value: string, name: string) => string | undefined;
}

function textField<R extends boolean>(isRequired: R, options: TextOptions): Field<R extends true ? string : string | undefined> {
  return {
    kind: 'text',
    required: isRequired,
    maxLength: options.maxLength,
    description: options.description,
    bind(raw, name) {
      if (isBlank(raw)) {
        return isRequired ? { ok: false, message: required(name) } : { ok: true, value: undefined as never };
      }
      if (options.maxLength !== undefined && raw.length > options.maxLength) {
        return { ok: false, message: `The field ${name} must be a string with a maximum length of ${options.maxLength}.` };
      }
      const problem = options.check?.(raw, name);
      return problem ? { ok: false, message: problem } : { ok: true, value: raw };
    },
  };
}

interface IntegerOptions {
  minimum: number;
  maximum: number;
  description?: string;
}

function integerField<D extends number | undefined>(
  isRequired: boolean,
  options: IntegerOptions,
  fallback: D,
): Field<D extends number ? number : number | undefined> {
  return {
    kind: 'integer',
    required: isRequired,
    minimum: options.minimum,
    maximum: options.maximum,
    description: options.description,
    bind(raw, name) {
      if (isBlank(raw)) {
        return isRequired ? { ok: false, message: required(name) } : { ok: true, value: fallback as never };
      }
      const trimmed = raw.trim();
      const value = Number(trimmed);
      if (!/^-?\d{1,20}$/.test(trimmed) || !Number.isSafeInteger(value)) {
        return { ok: false, message: notValid(raw, name) };
      }
      if (value < options.minimum || value > options.maximum) {
        return { ok: false, message: `The field ${name} must be between ${options.minimum} and ${options.maximum}.` };
      }
      return { ok: true, value: value as never };
    },
  };
}

export const field = {
  text: (options: TextOptions = {}) => textField(true, options),
  optionalText: (options: TextOptions = {}) => textField(false, options),
  integer: (options: IntegerOptions) => integerField(true, options, undefined as unknown as number),
  optionalInteger: <D extends number | undefined>(options: IntegerOptions & { default: D }) =>
    integerField(false, options, options.default),
  /** `true`/`false` in any case. */
  boolean: (description?: string): Field<boolean> => ({
    kind: 'boolean',
    required: true,
    description,
    bind(raw, name) {
      if (isBlank(raw)) return { ok: false, message: required(name) };
      const lower = raw.trim().toLowerCase();
      if (lower === 'true') return { ok: true, value: true };
      if (lower === 'false') return { ok: true, value: false };
      return { ok: false, message: notValid(raw, name) };
    },
  }),
};

/** Identifiers are positive bigints; anything past 2^53 cannot name a row. */
export const MAX_ID = Number.MAX_SAFE_INTEGER;

export type Source = Record<string, unknown> | null | undefined;

/**
 * Folds one source (query or body) into lower-case names. A name given twice within a source is
 * ambiguous and reported; values that are not text (nested objects from an odd parser) are invalid.
 */
function fold(source: Source, into: Map<string, { value: Raw; problem?: string }>, wanted: Map<string, string>) {
  if (!source || typeof source !== 'object') return;
  const seen = new Set<string>();
  for (const key of Object.keys(source)) {
    const lower = key.toLowerCase();
    const name = wanted.get(lower);
    if (name === undefined) continue; // Unknown parameters are ignored, as the original service did.
    const value = source[key];
    if (seen.has(lower) || Array.isArray(value)) {
      into.set(lower, { value: undefined, problem: `The ${name} field was given more than once.` });
    } else if (typeof value === 'string') {
      into.set(lower, { value });
    } else if (typeof value === 'number' || typeof value === 'boolean') {
      into.set(lower, { value: String(value) });
    } else {
      into.set(lower, { value: undefined, problem: `The ${name} field must be text.` });
    }
    seen.add(lower);
  }
}

/** Binds `spec` from the sources, later sources winning; throws one -10 with every problem. */
export function bindParameters<S extends Spec>(spec: S, ...sources: Source[]): Bound<S> {
  const wanted = new Map(Object.keys(spec).map((name) => [name.toLowerCase(), name]));
  const values = new Map<string, { value: Raw; problem?: string }>();
  for (const source of sources) fold(source, values, wanted);

  const bound: Record<string, unknown> = {};
  const items: string[] = [];
  for (const [name, f] of Object.entries(spec)) {
    const entry = values.get(name.toLowerCase());
    if (entry?.problem) {
      items.push(entry.problem);
      continue;
    }
    const outcome = f.bind(entry?.value, name);
    if (outcome.ok) bound[name] = outcome.value;
    else items.push(outcome.message);
  }
  if (items.length > 0) throw invalidInput(items);
  return bound as Bound<S>;
}

export type JsonSchema = Record<string, unknown>;

const FORM = 'application/x-www-form-urlencoded';

function fieldSchema({ kind, minimum, maximum, maxLength, description }: Field<unknown>): JsonSchema {
  const schema: JsonSchema = { type: kind === 'text' ? 'string' : kind };
  if (minimum !== undefined) schema.minimum = minimum;
  if (maximum !== undefined) schema.maximum = maximum;
  if (maxLength !== undefined) schema.maxLength = maxLength;
  if (description !== undefined) schema.description = description;
  return schema;
}

/** The JSON schema of a parameter spec (plus `extra` required properties), for /docs. */
export function parametersSchema(spec: Spec, extra: Record<string, JsonSchema> = {}): JsonSchema {
  const names = Object.keys(spec);
  return {
    type: 'object',
    properties: { ...Object.fromEntries(names.map((name) => [name, fieldSchema(spec[name]!)])), ...extra },
    required: [...names.filter((name) => spec[name]!.required), ...Object.keys(extra)],
  };
}

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

/**
 * The responses of an operation, for /docs: success (Code 0 with `fields`) and the protocol's
 * refusals all come with HTTP 200; transport-level failures carry their status and the envelope.
 */
export function envelopeResponses(fields: Record<string, JsonSchema> = {}): Record<string, JsonSchema> {
  const success: JsonSchema = {
    type: 'object',
    title: 'Success',
    properties: { Code: { type: 'integer', enum: [0] }, Message: { type: 'string' }, ...fields },
    required: ['Code', 'Message', ...Object.keys(fields)],
  };
  const json = (schema: JsonSchema) => ({ 'application/json': { schema } });
  return {
    200: {
      description: 'Code 0 with the fields of the operation; or a refusal, also with HTTP 200: Code -1 with a Message, or Code -10 with Items.',
      content: json({ oneOf: [success, refusal(-1, 'Failure', false), refusal(-10, 'Invalid input', true)] }),
    },
    default: {
      description: 'Transport-level failure with the envelope: 404, 413, 415, 429 (with Retry-After), 500, 503 or 507.',
      content: json({
        type: 'object',
        properties: { Code: { type: 'integer', enum: [-1, -10] }, Message: { type: 'string' }, Items: { type: 'array', items: { type: 'string' } } },
        required: ['Code', 'Message'],
      }),
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
  /** Route config. */
  config?: Record<string, unknown>;
  /** Runs first on each of the operation's routes, e.g. one rate limit shared by all its methods. */
  onRequest?: onRequestAsyncHookHandler;
  handler: (params: Bound<S>, request: FastifyRequest, reply: FastifyReply) => Promise<Record<string, unknown>>;
}

/**
 * Registers an /API operation: GET operations also answer under their `…Try` name; parameters are
 * bound before the handler runs; the handler's result (which carries its Message) gets Code 0.
 */
export function defineOperation<S extends Spec>(fastify: FastifyInstance, operation: Operation<S>): void {
  const urls = [`/API/${operation.name}`];
  if (operation.method === 'GET') urls.push(`/API/${operation.name}Try`);
  const methods = typeof operation.method === 'string' ? [operation.method] : operation.method;
  const parameters = parametersSchema(operation.params);
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const params =
      request.method === 'POST'
        ? bindParameters(operation.params, request.query as Source, request.body as Source)
        : bindParameters(operation.params, request.query as Source);
    const result = await operation.handler(params, request, reply);
    return { ...result, Code: 0 };
  };
  for (const method of methods) {
    for (const url of urls) {
      fastify.route({
        method,
        url,
        config: { ...operation.config, operation: operation.name },
        ...(operation.onRequest ? { onRequest: operation.onRequest } : {}),
        // Documentation only: see the validator compiler below.
        schema: {
          summary: operation.summary,
          ...(operation.tag ? { tags: [operation.tag] } : {}),
          ...(method === 'GET' ? { querystring: parameters } : { body: { content: { [FORM]: { schema: parameters } } } }),
          response: envelopeResponses(operation.response),
        },
        handler,
      });
    }
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The /API operation a route serves, for logs and metrics. */
    operation?: string;
  }
}

/** Body parsing for the form posts; JSON and plain text are not part of the protocol. */
export default fp(
  async (fastify) => {
    await fastify.register(formbody);
    fastify.removeContentTypeParser(['application/json', 'text/plain']);
    // Route schemas describe the operations for /docs; they are not enforced. Binding validates,
    // with the texts the original clients know, so Ajv must neither reject, coerce nor strip.
    fastify.setValidatorCompiler(() => () => true);
    // Replies are serialized as they are: compiled response schemas would drop undeclared fields,
    // coerce types, and refusals share HTTP 200 with the success shape.
    fastify.setSerializerCompiler(() => (data) => JSON.stringify(data));
  },
  { name: 'validation', fastify: '5.x', dependencies: ['envelope'] },
);
