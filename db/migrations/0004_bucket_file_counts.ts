import { sql, type Kysely } from 'kysely';

/*
 * Each bucket keeps the number of its file rows, so FileCount is read, not counted, however large
 * the bucket grows. Statement-level triggers keep it exact on every path that inserts or deletes
 * files (uploads, replacing an expired holder, DeleteFile, expiry, bucket and app deletion, cascades),
 * in the same transaction as the change, with one UPDATE per statement whatever its row count.
 * Expired rows the sweep has not removed yet are still in the counter: readers subtract them
 * through files_bucket_expires_at, which holds only a sweep interval's worth of them per bucket.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`ALTER TABLE buckets ADD COLUMN file_count bigint NOT NULL DEFAULT 0`.execute(db);

  await sql`
    CREATE FUNCTION files_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE buckets SET file_count = buckets.file_count + added.n
      FROM (SELECT bucket_id, count(*) AS n FROM inserted_files GROUP BY bucket_id) AS added
      WHERE buckets.bucket_id = added.bucket_id;
      RETURN NULL;
    END $$`.execute(db);
  await sql`
    CREATE FUNCTION files_count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE buckets SET file_count = buckets.file_count - removed.n
      FROM (SELECT bucket_id, count(*) AS n FROM deleted_files GROUP BY bucket_id) AS removed
      WHERE buckets.bucket_id = removed.bucket_id;
      RETURN NULL;
    END $$`.execute(db);
  // Creating the triggers locks files against writes until this migration commits, so the
  // backfill below counts exactly the rows the triggers will go on from.
  await sql`
    CREATE TRIGGER files_count_insert AFTER INSERT ON files
    REFERENCING NEW TABLE AS inserted_files FOR EACH STATEMENT EXECUTE FUNCTION files_count_inserted()`.execute(db);
  await sql`
    CREATE TRIGGER files_count_delete AFTER DELETE ON files
    REFERENCING OLD TABLE AS deleted_files FOR EACH STATEMENT EXECUTE FUNCTION files_count_deleted()`.execute(db);
  await sql`
    UPDATE buckets SET file_count = counted.n
    FROM (SELECT bucket_id, count(*) AS n FROM files GROUP BY bucket_id) AS counted
    WHERE buckets.bucket_id = counted.bucket_id`.execute(db);

  // A bucket's files in FileKey order, a page at a time (ViewAllFiles, bucket deletion).
  await db.schema.createIndex('files_bucket_file_key').on('files').columns(['bucket_id', 'file_key']).execute();
  // A bucket's expired rows not swept yet, subtracted from file_count.
  await db.schema.createIndex('files_bucket_expires_at').on('files').columns(['bucket_id', 'expires_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('files_bucket_expires_at').execute();
  await db.schema.dropIndex('files_bucket_file_key').execute();
  await sql`DROP TRIGGER files_count_delete ON files`.execute(db);
  await sql`DROP TRIGGER files_count_insert ON files`.execute(db);
  await sql`DROP FUNCTION files_count_deleted()`.execute(db);
  await sql`DROP FUNCTION files_count_inserted()`.execute(db);
  await sql`ALTER TABLE buckets DROP COLUMN file_count`.execute(db);
}
