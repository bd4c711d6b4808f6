import { FileStoreError } from '@filestore/client';

/** Where a command writes: results to out, messages and progress to err. */
export interface Io {
  out: NodeJS.WritableStream & { isTTY?: boolean };
  err: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  env: Record<string, string | undefined>;
  /** Answers a yes/no question on the terminal; undefined when there is none to ask on. */
  confirm?: (question: string) => Promise<boolean>;
  /** Reads a secret typed on the terminal without showing it, or the first line of a piped stdin. */
  readSecret: (prompt: string) => Promise<string>;
}

/** A failure of the command line itself (exit status 2), not of the service. */
export class UsageError extends Error {}

export const line = (stream: NodeJS.WritableStream, text = '') => stream.write(`${text}\n`);
export const json = (io: Io, value: unknown) => line(io.out, JSON.stringify(value, null, 2));

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
export function humanSize(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${UNITS[unit]}`;
}

/** `2026-11-20 10:04` (UTC), as the service keeps times. */
export const shortTime = (time: number | string) => new Date(time).toISOString().slice(0, 16).replace('T', ' ');

/** Rows as aligned columns; the last column is left as it is (names may hold anything). */
export function table(io: Io, header: string[], rows: string[][]): void {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const format = (row: string[]) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ');
  line(io.out, format(header));
  for (const row of rows) line(io.out, format(row));
}

/** A name from the service shown on a terminal: control characters would move the cursor or change colours. */
export const printable = (text: string) => text.replace(/[\p{Cc}\p{Cf}]/gu, '\uFFFD');

/** How an error is told: the service's Message and Items, never a stack. */
export function describeError(error: unknown): { Code: number; Message: string; Items?: readonly string[] } {
  if (error instanceof FileStoreError) return { Code: error.code, Message: error.message, ...(error.items.length ? { Items: error.items } : {}) };
  const message = error instanceof Error ? error.message : String(error);
  return { Code: -1, Message: message };
}

export function reportError(io: Io, error: unknown, asJson: boolean): void {
  const described = describeError(error);
  if (asJson) {
    line(io.err, JSON.stringify(described));
    return;
  }
  line(io.err, `filestore: ${printable(described.Message)}`);
  for (const item of described.Items ?? []) line(io.err, `  - ${printable(item)}`);
}
