import { sql, type Kysely } from 'kysely';
import t, { type Test } from 'tap';
import { MAX_NAMED_STATEMENTS, statementName } from '../db/named-statements.js';
import type { Database } from '../db/schema.js';
import { findPublicFileByKey } from '../src/services/downloadable-files.js';
import { findLiveFiles } from '../src/services/files.js';
import { tryLockResumable } from '../src/services/resumable-locks.js';
import { findResumable } from '../src/services/resumable-rows.js';
import { createBucket } from './helpers/buckets.js';
import { startService, testDatabase, type TestService } from './helpers/service.js';
import { storeFile } from './helpers/stored-files.js';

interface Prepared {
  name: string;
  statement: string;
  plans: number;
}

/** The statements this connection has prepared, with how many times each was planned or run. */
async function preparedOn(connection: Kysely<Database>): Promise<Prepared[]> {
  const { rows } = await sql<Prepared>`select name, statement, (generic_plans + custom_plans)::int as plans from pg_prepared_statements`.execute(connection);
  return rows;
}

async function serviceWithFiles(t: Test, count: number): Promise<{ service: TestService; bucketId: number; fileKeys: number[] }> {
  const service = await startService(t);
  const owner = await service.newApp();
  const bucketId = await createBucket(service, owner.token);
  const fileKeys: number[] = [];
  for (let i = 0; i < count; i++) fileKeys.push((await storeFile(service, bucketId)).fileKey);
  return { service, bucketId, fileKeys };
}

t.test('a file lookup is prepared once per connection and run as that statement, whatever the number of keys', async (t) => {
  const { service, fileKeys } = await serviceWithFiles(t, 3);
  await service.app.db.connection().execute(async (connection) => {
    for (const keys of [fileKeys.slice(0, 1), fileKeys, [fileKeys[2]!, 999_999_999], fileKeys.slice(0, 1)]) {
      const rows = await findLiveFiles(connection, keys);
      t.same(
        rows.map((row) => row.file_key),
        keys.filter((key) => fileKeys.includes(key)),
        `the live files among ${keys.length} keys, in the order asked`,
      );
    }
    const lookups = (await preparedOn(connection)).filter((statement) => /from "files"/.test(statement.statement) && /any\(/.test(statement.statement));
    t.equal(lookups.length, 1, 'one statement for lists of 1, 2 and 3 keys');
    t.equal(lookups[0]?.plans, 4, 'run four times as the prepared statement');
  });
});

t.test('a column that another instance’s migration adds does not break what is prepared', async (t) => {
  const { service, bucketId, fileKeys } = await serviceWithFiles(t, 1);
  const [fileKey] = fileKeys as [number];
  const owner = await service.newApp();
  const uploadId = `named-${fileKey}`;
  await service.app.db
    .insertInto('resumable_uploads')
    .values({ upload_id: uploadId, app_id: owner.appId, bucket_id: bucketId, file_name: 'later.bin', alive_days: 1, size_bytes: 10, metadata: '{}', expires_at: new Date(Date.now() + 60_000) })
    .execute();
  // The other instance: a pool of its own, migrating while this one's statements are prepared.
  const other = await (await testDatabase()).openAnother();
  t.teardown(async () => {
    await sql`alter table files drop column if exists later_column`.execute(other.db);
    await sql`alter table resumable_uploads drop column if exists later_column`.execute(other.db);
  });

  await service.app.db.connection().execute(async (connection) => {
    const read = async () => ({
      file: (await findLiveFiles(connection, [fileKey]))[0],
      download: await findPublicFileByKey(connection, fileKey),
      resumable: await findResumable(connection, uploadId),
      locked: await tryLockResumable(connection, uploadId, 'lock-token'),
    });
    const before = await read();
    t.equal(before.file?.file_key, fileKey);
    t.equal(before.download?.fileKey, fileKey);
    t.equal(before.resumable?.file_name, 'later.bin');
    t.equal(typeof before.locked === 'object' && before.locked.lock_token, 'lock-token');
    t.ok((await preparedOn(connection)).length >= 4, 'the reads are prepared on this connection');

    await sql`alter table files add column later_column text default 'new'`.execute(other.db);
    await sql`alter table resumable_uploads add column later_column text default 'new'`.execute(other.db);

    const after = await read();
    t.same(after.file, before.file, 'the same file row, without the new column');
    t.same(after.download, before.download);
    t.same(after.resumable && { ...after.resumable, lock_count: 0, lock_token: null, locked_until: null }, before.resumable && { ...before.resumable, lock_count: 0, lock_token: null, locked_until: null });
    t.equal(typeof after.locked === 'object' && after.locked.upload_id, uploadId);
  });
  const viewed = (await service.app.inject({ url: `/API/ViewOneFile?FileKey=${fileKey}` })).json();
  t.equal(viewed.File?.FileKey, fileKey, 'ViewOneFile after the migration');
});

t.test('statements are named within a bound, IN lists never', async (t) => {
  t.equal(statementName('select 1 from files where file_key in ($1, $2)'), undefined, 'an IN list: one text per length');
  const first = statementName('select $1::int as named_first');
  t.match(first, /^s\d+$/);
  t.equal(statementName('select $1::int as named_first'), first, 'the same text, the same name');
  const names = new Set<string>();
  for (let i = 0; i < MAX_NAMED_STATEMENTS + 10; i++) {
    const name = statementName(`select $1::int as named_${i}`);
    if (name !== undefined) names.add(name);
  }
  t.ok(names.size < MAX_NAMED_STATEMENTS, `at most ${MAX_NAMED_STATEMENTS} names in all`);
  t.equal(statementName('select $1::int as one_more'), undefined, 'past the bound, a new statement runs unnamed');
  t.equal(statementName('select $1::int as named_first'), first, 'the statements already named keep their names');
});
