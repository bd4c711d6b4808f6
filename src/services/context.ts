import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { BlobStore } from '../storage/blob-store.js';
import type { ResumableBytes } from '../storage/resumable-bytes.js';
import { forgetVariantsOf } from './image-variant-rows.js';

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
 * Removes bytes whose rows are already committed away, with the image variants made of them. The
 * operation has succeeded by then, so a failure is logged, not thrown: the bytes are unreferenced
 * (and variants left without their file) and the orphan sweep removes them.
 */
export async function dropBytes(ctx: ServiceContext, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return;
  const variants = await forgetVariantsOf(ctx.db, keys).catch((error: unknown) => {
    ctx.log.error({ err: error, count: keys.length }, 'image variants of removed files were not forgotten');
    return [];
  });
  const all = [...keys, ...variants];
  await ctx.storage.remove(all).catch((error: unknown) => ctx.log.error({ err: error, count: all.length }, 'stored bytes were not removed'));
}
