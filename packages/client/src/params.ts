import { invalidArguments, problems } from './errors.js';
import type { Param } from './shapes.js';

export type Value = string | number | boolean | undefined;

/** The problem of one argument, in the service's words; undefined when it is fine. */
function problem(name: string, param: Param, value: Value): string | undefined {
  if (value === undefined || (typeof value === 'string' && value.trim() === '')) return param.required ? problems.required(name) : undefined;
  switch (param.kind) {
    case 'text':
      if (typeof value !== 'string') return problems.notValid(value, name);
      return param.maxLength !== undefined && value.length > param.maxLength ? problems.tooLong(name, param.maxLength) : undefined;
    case 'boolean':
      return typeof value === 'boolean' ? undefined : problems.notValid(value, name);
    case 'integer':
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) return problems.notValid(value, name);
      return value < param.minimum! || value > param.maximum! ? problems.outOfRange(name, param.minimum!, param.maximum!) : undefined;
  }
}

/** Checks arguments before anything is sent: every problem at once, as a -10 FileStoreError. */
export function checkParams(spec: Readonly<Record<string, Param>>, values: Record<string, Value>): void {
  const items = Object.entries(spec).flatMap(([name, param]) => problem(name, param, values[name]) ?? []);
  if (items.length > 0) throw invalidArguments(items);
}

/** The arguments that were given, as query text. */
export function queryOf(values: Record<string, Value>): URLSearchParams {
  return new URLSearchParams(Object.entries(values).flatMap(([name, value]): [string, string][] => (value === undefined ? [] : [[name, String(value)]])));
}
