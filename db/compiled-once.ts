import { CompiledQuery, type Compilable, type Kysely } from 'kysely';
import type { Database } from './schema.js';

/** Where a parameter of the compiled text comes from: an argument of the call, or a constant of the query. */
type Slot = { argument: number } | { constant: unknown };

/**
 * A query of one fixed shape, built and compiled to SQL on its first call only. Kysely builds and
 * compiles a query again on every call: 25–80 µs of the main thread for a one-row lookup, more
 * than the rest of a download's own work. `build` is handed placeholders for the arguments; each
 * must end up as a value of the query (never in its text or its shape), which the first call
 * checks. Later calls send the same text with the arguments in their places.
 */
export function compiledOnce<A extends readonly unknown[], Row>(
  build: (db: Kysely<Database>, ...args: A) => Compilable<Row>,
): (db: Kysely<Database>, ...args: A) => Promise<Row[]> {
  let compiled: { sql: string; slots: Slot[] } | undefined;
  return async (db, ...args) => {
    compiled ??= compile(db, build, args.length);
    const parameters = compiled.slots.map((slot) => ('argument' in slot ? args[slot.argument] : slot.constant));
    const { rows } = await db.executeQuery<Row>(CompiledQuery.raw(compiled.sql, parameters));
    return rows;
  };
}

function compile<A extends readonly unknown[], Row>(db: Kysely<Database>, build: (db: Kysely<Database>, ...args: A) => Compilable<Row>, arity: number) {
  // Objects no query could hold as a constant: where each lands among the parameters says which argument goes there.
  const placeholders = Array.from({ length: arity }, () => ({}));
  const query = build(db, ...(placeholders as unknown as A)).compile();
  const slots: Slot[] = query.parameters.map((value) => {
    const argument = placeholders.indexOf(value as object);
    return argument >= 0 ? { argument } : { constant: value };
  });
  placeholders.forEach((_, argument) => {
    if (!slots.some((slot) => 'argument' in slot && slot.argument === argument)) throw new Error(`argument ${argument} is not a value of the query: ${query.sql}`);
  });
  return { sql: query.sql, slots };
}
