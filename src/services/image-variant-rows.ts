import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { ImageFormat } from './image-options.js';

/** The bookkeeping of kept image variants: which exist, how large, when last served. Their bytes are the store's. */

export interface VariantRecord {
  readonly format: ImageFormat;
  readonly size: number;
}

/** Rows per statement when variants are removed. */
const BATCH = 1000;

export async function findVariant(db: Kysely<Database>, variantKey: string): Promise<VariantRecord | undefined> {
  const row = await db.selectFrom('image_variants').select(['format', 'size_bytes']).where('variant_key', '=', variantKey).executeTakeFirst();
  return row ? { format: row.format as ImageFormat, size: Number(row.size_bytes) } : undefined;
}

/**
 * Records a variant just stored, in one statement that finds its file still there: a variant of a
 * file deleted meanwhile is not recorded (false), and its bytes are the caller's to remove. A
 * variant made again (after its bytes were lost) is served from now on.
 */
export async function recordVariant(db: Kysely<Database>, variant: { variantKey: string; sourceKey: string; format: ImageFormat; size: number }): Promise<boolean> {
  const { rows } = await sql<{ variant_key: string }>`
    INSERT INTO image_variants (variant_key, source_key, format, size_bytes)
    SELECT ${variant.variantKey}, ${variant.sourceKey}, ${variant.format}, ${variant.size}
    WHERE EXISTS (SELECT 1 FROM files WHERE storage_key = ${variant.sourceKey})
    ON CONFLICT (variant_key) DO UPDATE SET size_bytes = excluded.size_bytes, format = excluded.format, last_used_at = now()
    RETURNING variant_key`.execute(db);
  return rows.length > 0;
}

/** Marks variants as served now. */
export async function touchVariants(db: Kysely<Database>, variantKeys: readonly string[]): Promise<void> {
  if (variantKeys.length === 0) return;
  await db.updateTable('image_variants').set({ last_used_at: new Date() }).where('variant_key', 'in', variantKeys).execute();
}

/**
 * Removes the rows of the least recently served variants until those left fit in `budgetBytes`,
 * and returns their keys, whose bytes the caller removes. Instances evicting at once each get
 * only the rows they deleted.
 */
export async function evictPastBudget(db: Kysely<Database>, budgetBytes: number): Promise<string[]> {
  const { rows } = await sql<{ variant_key: string }>`
    DELETE FROM image_variants WHERE variant_key IN (
      SELECT variant_key FROM (
        SELECT variant_key, sum(size_bytes) OVER (ORDER BY last_used_at DESC, variant_key) AS kept FROM image_variants
      ) ranked WHERE kept > ${budgetBytes})
    RETURNING variant_key`.execute(db);
  return rows.map((row) => row.variant_key);
}

/** Removes the rows of every variant of these files' bytes and returns their keys. */
export async function forgetVariantsOf(db: Kysely<Database>, sourceKeys: readonly string[]): Promise<string[]> {
  if (sourceKeys.length === 0) return [];
  const rows = await db.deleteFrom('image_variants').where('source_key', 'in', sourceKeys).returning('variant_key').execute();
  return rows.map((row) => row.variant_key);
}

/**
 * Removes the rows of up to `batchSize` variants whose file is gone (a removal that failed half-way,
 * or a render that finished as its file was deleted) and returns their keys.
 */
export async function forgetOrphanVariants(db: Kysely<Database>, batchSize = BATCH): Promise<string[]> {
  const { rows } = await sql<{ variant_key: string }>`
    DELETE FROM image_variants WHERE variant_key IN (
      SELECT v.variant_key FROM image_variants v
      WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.storage_key = v.source_key) LIMIT ${batchSize})
    RETURNING variant_key`.execute(db);
  return rows.map((row) => row.variant_key);
}

/** Which of these stored keys are recorded variants. */
export async function recordedVariantKeys(db: Kysely<Database>, keys: readonly string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const rows = await db.selectFrom('image_variants').select('variant_key').where('variant_key', 'in', keys).execute();
  return new Set(rows.map((row) => row.variant_key));
}
