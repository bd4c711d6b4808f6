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

/** The kind of a database error, or undefined for any other error. */
export function databaseError(error: unknown): DatabaseErrorInfo | undefined {
  const e = error as { code?: unknown; constraint?: unknown; message?: unknown; syscall?: unknown } | null;
  if (!e || typeof e !== 'object') return undefined;
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
