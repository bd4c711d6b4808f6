import { invalid } from '../errors.js';

/**
 * A JSON body of an /API operation: one object of the operation's fields, bound by the same rules
 * as a form (src/http/binding.ts). JSON.parse keeps only the last of a key given twice, which a form
 * would report as ambiguous: such a key is handed to the binding as a list, so it is reported too.
 */
export function parseJsonFields(text: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalid.jsonNotObject();
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw invalid.jsonNotObject();
  const fields = parsed as Record<string, unknown>;
  const keys = topLevelKeys(text);
  if (keys.length === Object.keys(fields).length) return fields;
  const seen = new Set<string>();
  for (const key of keys) {
    if (seen.has(key)) fields[key] = [fields[key], fields[key]];
    seen.add(key);
  }
  return fields;
}

/** The index of the quote that closes the string opening at `start`. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) i++;
    else if (c === 0x22) return i;
  }
  return text.length;
}

/** The keys of the outermost object of a valid JSON text, in order, repeats included. */
function topLevelKeys(text: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      const end = stringEnd(text, i);
      if (depth === 1 && expectKey) keys.push(JSON.parse(text.slice(i, end + 1)) as string);
      expectKey = false;
      i = end;
    } else if (c === '{' || c === '[') {
      depth++;
      expectKey = depth === 1;
    } else if (c === '}' || c === ']') {
      depth--;
    } else if (c === ',' && depth === 1) {
      expectKey = true;
    }
  }
  return keys;
}
