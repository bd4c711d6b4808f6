import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { BlobStore } from '../storage/blob-store.js';
import type { ResumableBytes } from '../storage/resumable-bytes.js';

/** What a log line is written to; Fastify's request and instance loggers are ones. */
export interface Logger {
  error(details: object, message: string): void;
  warn(details: object, message: string): void;
  info(details: object, message: string): void;
  debug(details: object, message: string): void;
}

/** What an operation that touches both metadata and bytes works with. */
export interface ServiceContext {
  readonly db: Kysely<Database>;
  readonly storage: BlobStore;
  /** Where incomplete resumable uploads keep their bytes. */
  readonly resumable: ResumableBytes;
  readonly log: Logger;
}

/**
 * Removes bytes whose rows are already committed away. The operation has succeeded by then, so a
 * failure is logged, not thrown: the bytes are unreferenced and the orphan sweep removes them.
 */
export async function dropBytes(ctx: ServiceContext, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return;
  await ctx.storage.remove(keys).catch((error: unknown) => ctx.log.error({ err: error, count: keys.length }, 'stored bytes were not removed'));
}
