import { sql, type Kysely } from 'kysely';

/*
 * A bucket's count of file rows moves from one column of its row to a few rows of its own, one per
 * slot. Every upload's statement updated the bucket's row, and held its lock until the commit was on
 * disk: uploads into one bucket, from every instance, took turns at the speed of the database's WAL
 * flush. Each connection now adds to the slot its server process picks (pg_backend_pid() % 16), so
 * connections rarely share a row, and the count is the sum of the slots, as exact as before.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
export async function up(db: Kysely<any>): Promise<void> {
  // Writers of files wait until this migration commits, so none is counted in the column after it was copied.
  await sql`LOCK TABLE files IN SHARE ROW EXCLUSIVE MODE`.execute(db);
  await sql`
    CREATE TABLE bucket_file_counts (
      bucket_id bigint NOT NULL REFERENCES buckets (bucket_id) ON DELETE CASCADE,
      slot smallint NOT NULL,
      n bigint NOT NULL,
      PRIMARY KEY (bucket_id, slot)
    )`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION files_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO bucket_file_counts AS c (bucket_id, slot, n)
      SELECT bucket_id, pg_backend_pid() % 16, count(*) FROM inserted_files GROUP BY bucket_id
      ON CONFLICT (bucket_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
      RETURN NULL;
    END $$`.execute(db);
  // Rows removed with their bucket (a cascade from its deletion) leave nothing to count.
  await sql`
    CREATE OR REPLACE FUNCTION files_count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO bucket_file_counts AS c (bucket_id, slot, n)
      SELECT d.bucket_id, pg_backend_pid() % 16, -count(*) FROM deleted_files d
      WHERE EXISTS (SELECT 1 FROM buckets b WHERE b.bucket_id = d.bucket_id)
      GROUP BY d.bucket_id
      ON CONFLICT (bucket_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
      RETURN NULL;
    END $$`.execute(db);
  await sql`INSERT INTO bucket_file_counts (bucket_id, slot, n) SELECT bucket_id, 0, file_count FROM buckets WHERE file_count <> 0`.execute(db);
  await sql`ALTER TABLE buckets DROP COLUMN file_count`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`LOCK TABLE files IN SHARE ROW EXCLUSIVE MODE`.execute(db);
  await sql`ALTER TABLE buckets ADD COLUMN file_count bigint NOT NULL DEFAULT 0`.execute(db);
  await sql`
    UPDATE buckets SET file_count = counted.n
    FROM (SELECT bucket_id, sum(n) AS n FROM bucket_file_counts GROUP BY bucket_id) AS counted
    WHERE buckets.bucket_id = counted.bucket_id`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION files_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE buckets SET file_count = buckets.file_count + added.n
      FROM (SELECT bucket_id, count(*) AS n FROM inserted_files GROUP BY bucket_id) AS added
      WHERE buckets.bucket_id = added.bucket_id;
      RETURN NULL;
    END $$`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION files_count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE buckets SET file_count = buckets.file_count - removed.n
      FROM (SELECT bucket_id, count(*) AS n FROM deleted_files GROUP BY bucket_id) AS removed
      WHERE buckets.bucket_id = removed.bucket_id;
      RETURN NULL;
    END $$`.execute(db);
  await sql`DROP TABLE bucket_file_counts`.execute(db);
}
