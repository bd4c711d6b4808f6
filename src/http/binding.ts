import type { IncomingHttpHeaders } from 'node:http';
import { invalidInput, problems } from '../errors.js';
import { bearerToken } from './bearer.js';

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
  /** Given in two sources (query and body, or header), both must be the same value; else the body wins. */
  readonly mustAgree?: boolean;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly maxLength?: number;
  readonly description?: string;
  bind(raw: Raw, name: string): Outcome<T>;
}

export type Spec = Record<string, Field<unknown>>;
export type Bound<S extends Spec> = { [K in keyof S]: S[K] extends Field<infer T> ? T : never };
export type Source = Record<string, unknown> | null | undefined;

const isBlank = (raw: Raw): raw is undefined => raw === undefined || raw.trim() === '';

interface TextOptions {
  maxLength?: number;
  description?: string;
  /** Further rules; returns the text for the Items array, or undefined when the value is fine. */
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
        return isRequired ? { ok: false, message: problems.required(name) } : { ok: true, value: undefined as never };
      }
      if (options.maxLength !== undefined && raw.length > options.maxLength) {
        return { ok: false, message: problems.tooLong(name, options.maxLength) };
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
        return isRequired ? { ok: false, message: problems.required(name) } : { ok: true, value: fallback as never };
      }
      const trimmed = raw.trim();
      const value = Number(trimmed);
      if (!/^-?\d{1,20}$/.test(trimmed) || !Number.isSafeInteger(value)) {
        return { ok: false, message: problems.notValid(raw, name) };
      }
      if (value < options.minimum || value > options.maximum) {
        return { ok: false, message: problems.outOfRange(name, options.minimum, options.maximum) };
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
      if (isBlank(raw)) return { ok: false, message: problems.required(name) };
      const lower = raw.trim().toLowerCase();
      if (lower === 'true') return { ok: true, value: true };
      if (lower === 'false') return { ok: true, value: false };
      return { ok: false, message: problems.notValid(raw, name) };
    },
  }),
};

/** Identifiers are positive bigints; anything past 2^53 cannot name a row. */
export const MAX_ID = Number.MAX_SAFE_INTEGER;

type Folded = Map<string, { value: Raw; problem?: string }>;

/** Sets one value; a later source wins, unless the field's values must agree and these differ. */
function put(into: Folded, lower: string, name: string, value: string, mustAgree: boolean) {
  const given = into.get(lower);
  if (given?.problem) return;
  if (mustAgree && given && !isBlank(given.value) && !isBlank(value) && given.value.trim() !== value.trim()) {
    into.set(lower, { value: undefined, problem: problems.givenTwiceDifferently(name) });
  } else {
    into.set(lower, { value });
  }
}

/**
 * Folds one source (query or body) into lower-case names. A name given twice within a source is
 * ambiguous and reported; values that are not text (nested objects from an odd parser) are invalid.
 */
function fold(source: Source, into: Folded, spec: Spec, wanted: Map<string, string>) {
  if (!source || typeof source !== 'object') return;
  const seen = new Set<string>();
  for (const key of Object.keys(source)) {
    const lower = key.toLowerCase();
    const name = wanted.get(lower);
    if (name === undefined) continue; // Unknown parameters are ignored, as the original service did.
    const value = source[key];
    if (seen.has(lower) || Array.isArray(value)) {
      into.set(lower, { value: undefined, problem: problems.givenTwice(name) });
    } else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      put(into, lower, name, String(value), spec[name]!.mustAgree === true);
    } else {
      into.set(lower, { value: undefined, problem: problems.notText(name) });
    }
    seen.add(lower);
  }
}

const ACCESS_TOKEN = 'accesstoken';

/** The outcome of binding: the values, or one text per invalid input, telling missing ones apart. */
export type Binding<S extends Spec> = { ok: true; value: Bound<S> } | { ok: false; items: string[]; onlyMissing: boolean };

/** Binds `spec` from the sources, later sources winning; throws one -10 with every problem. */
export function bindParameters<S extends Spec>(spec: S, ...sources: Source[]): Bound<S> {
  return valueOf(bind(spec, sources, undefined));
}

/**
 * As bindParameters, with the AccessToken also taken from the request's `Authorization: Bearer`
 * header, which must agree with an AccessToken parameter given too.
 */
export function bindRequest<S extends Spec>(spec: S, headers: IncomingHttpHeaders, ...sources: Source[]): Bound<S> {
  return valueOf(tryBindRequest(spec, headers, ...sources));
}

/** As bindRequest, without throwing: for a request whose parameters may still be arriving. */
export function tryBindRequest<S extends Spec>(spec: S, headers: IncomingHttpHeaders, ...sources: Source[]): Binding<S> {
  return bind(spec, sources, bearerToken(headers));
}

function valueOf<S extends Spec>(binding: Binding<S>): Bound<S> {
  if (!binding.ok) throw invalidInput(binding.items);
  return binding.value;
}

function bind<S extends Spec>(spec: S, sources: Source[], bearer: string | undefined): Binding<S> {
  const wanted = new Map(Object.keys(spec).map((name) => [name.toLowerCase(), name]));
  const values: Folded = new Map();
  for (const source of sources) fold(source, values, spec, wanted);
  const tokenName = wanted.get(ACCESS_TOKEN);
  if (bearer !== undefined && tokenName !== undefined) put(values, ACCESS_TOKEN, tokenName, bearer, true);

  const bound: Record<string, unknown> = {};
  const items: string[] = [];
  let onlyMissing = true;
  for (const [name, f] of Object.entries(spec)) {
    const entry = values.get(name.toLowerCase());
    const outcome: Outcome<unknown> = entry?.problem ? { ok: false, message: entry.problem } : f.bind(entry?.value, name);
    if (outcome.ok) {
      bound[name] = outcome.value;
    } else {
      items.push(outcome.message);
      onlyMissing &&= !entry?.problem && isBlank(entry?.value);
    }
  }
  return items.length > 0 ? { ok: false, items, onlyMissing } : { ok: true, value: bound as Bound<S> };
}

/** The parameters several operations share. */
export const param = {
  accessToken: () => field.text({ maxLength: 128, description: 'A token from /API/AccessToken; or send it as `Authorization: Bearer <token>`.' }),
  bucketId: (description = 'The bucket.') => field.integer({ minimum: 1, maximum: MAX_ID, description }),
  /** The one spec of an upload, for every entry point (UploadFile, resumable creation). */
  upload: () => ({
    AccessToken: { ...param.accessToken(), mustAgree: true },
    BucketId: { ...param.bucketId(), mustAgree: true },
    AliveDays: field.integer({ minimum: 1, maximum: 18250, description: 'Days the file is kept.' }),
  }),
  fileKey: (description?: string) => field.integer({ minimum: 1, maximum: MAX_ID, description }),
};
