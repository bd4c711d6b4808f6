import type pg from 'pg';

/**
 * What a database error means to the service. PostgreSQL's SQLSTATE codes and the driver's own
 * error codes are read here and nowhere else.
 */
export type DatabaseErrorKind = 'unique-violation' | 'foreign-key-violation' | 'serialization-failure' | 'connection-lost';

export interface DatabaseErrorInfo {
  kind: DatabaseErrorKind;
  /** The constraint or index that was violated, when PostgreSQL names one. */
  constraint?: string;
}

const BY_SQLSTATE: Readonly<Record<string, DatabaseErrorKind>> = {
  '23505': 'unique-violation',
  '23503': 'foreign-key-violation',
  '40001': 'serialization-failure',
  '40P01': 'serialization-failure',
  // admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections
  '57P01': 'connection-lost',
  '57P02': 'connection-lost',
  '57P03': 'connection-lost',
  '53300': 'connection-lost',
};

/** Socket errors of the driver: the server cannot be reached right now. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);
const CONNECTION_MESSAGES = [
  /Connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /Client has encountered a connection error/i,
  /Cannot use a pool after calling end/i,
];

/**
 * Errors that came from the database driver: a socket error code such as ECONNRESET is also what a
 * client that goes away mid-request raises, so an error is judged only by where it came from.
 */
const fromDatabase = new WeakSet<object>();

/** Marks an error thrown by the driver (a query, or a connection from the pool) as the database's. */
export function markDatabaseError(error: unknown): unknown {
  if (error && typeof error === 'object') fromDatabase.add(error);
  return error;
}

type Query = (...args: unknown[]) => unknown;

/** Marks every error the pool's connections and queries reject with (callbacks are not used here). */
export function markDriverErrors(pool: pg.Pool): void {
  const rethrow = (error: unknown) => {
    throw markDatabaseError(error);
  };
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => unknown;
  pool.connect = ((...args: unknown[]) => {
    const result = connect(...args);
    return result instanceof Promise ? result.catch(rethrow) : result;
  }) as typeof pool.connect;
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as Query;
    client.query = ((...args: unknown[]) => {
      const result = query(...args);
      return result instanceof Promise ? result.catch(rethrow) : result;
    }) as typeof client.query;
  });
}

/** The kind of a database error, or undefined for any other error (including any not from the driver). */
export function databaseError(error: unknown): DatabaseErrorInfo | undefined {
  const e = error as { code?: unknown; constraint?: unknown; message?: unknown; syscall?: unknown } | null;
  if (!e || typeof e !== 'object' || !fromDatabase.has(e)) return undefined;
  const code = typeof e.code === 'string' ? e.code : '';
  const kind = BY_SQLSTATE[code];
  if (kind) return typeof e.constraint === 'string' ? { kind, constraint: e.constraint } : { kind };
  // Class 08: connection exceptions.
  if (code.startsWith('08') || SOCKET_CODES.has(code)) return { kind: 'connection-lost' };
  // A Unix socket whose server has gone away.
  if (code === 'ENOENT' && e.syscall === 'connect') return { kind: 'connection-lost' };
  if (typeof e.message === 'string' && CONNECTION_MESSAGES.some((re) => re.test(e.message as string))) return { kind: 'connection-lost' };
  return undefined;
}

export function isDatabaseError(error: unknown, kind: DatabaseErrorKind, constraint?: string): boolean {
  const info = databaseError(error);
  return info?.kind === kind && (constraint === undefined || info.constraint === constraint);
}
