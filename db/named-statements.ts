import type pg from 'pg';

/**
 * Distinct statements the process names. Past this, a new statement runs unnamed: a bound on what
 * every connection may keep prepared on the server, whatever queries come.
 */
export const MAX_NAMED_STATEMENTS = 200;

/** `in ($1, $2, …)`: one text per list length, so naming them would fill the bound with one query's shapes. */
const IN_LIST = /\bin \(\$\d/i;

const names = new Map<string, string>();

/** The statement's name, the same on every connection; undefined when it is to run unnamed. */
export function statementName(text: string): string | undefined {
  const known = names.get(text);
  if (known !== undefined || names.size >= MAX_NAMED_STATEMENTS || IN_LIST.test(text)) return known;
  const name = `s${names.size + 1}`;
  names.set(text, name);
  return name;
}

type Query = (config: unknown, values?: unknown, callback?: unknown) => unknown;

/**
 * Every repeated query with parameters runs as a named statement of its connection: PostgreSQL
 * parses and plans it once per connection instead of on every call, which is most of the database
 * server's CPU per small request (bench cases metadata and download-1k on PostgreSQL, whose rows
 * show the database's CPU). Statements without parameters
 * (transaction control, migrations' DDL) stay unnamed. The statements that return rows name their
 * columns rather than `*`, so that a column another instance's migration adds does not change what
 * a prepared statement returns.
 */
export function nameStatements(pool: pg.Pool): void {
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as Query;
    const named: Query = (config, values, callback) => {
      const name = typeof config === 'string' && Array.isArray(values) && values.length > 0 ? statementName(config) : undefined;
      return name === undefined ? query(config, values, callback) : query({ name, text: config, values }, callback);
    };
    client.query = named as typeof client.query;
  });
}
