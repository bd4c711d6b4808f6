import type { Bucket } from '@filestore/client';
import { json, line, printable, table, UsageError, type Io } from '../output.js';
import { findBucket } from '../resolve.js';
import type { openSession } from '../session.js';

type Session = Awaited<ReturnType<typeof openSession>>;
const yesNo = (flag: boolean) => (flag ? 'yes' : 'no');

export async function listBuckets(io: Io, { client, signal }: Session, asJson: boolean): Promise<void> {
  const { Buckets } = await client.viewMyBuckets({ signal });
  if (asJson) return void json(io, Buckets);
  if (Buckets.length === 0) return void line(io.out, 'No buckets yet: `filestore bucket create NAME`.');
  table(
    io,
    ['ID', 'READ', 'UPLOAD', 'FILES', 'NAME'],
    Buckets.map((bucket: Bucket) => [String(bucket.BucketId), yesNo(bucket.OpenToRead), yesNo(bucket.OpenToUpload), String(bucket.FileCount), printable(bucket.BucketName)]),
  );
}

export async function createBucket(io: Io, { client, signal }: Session, name: string, flags: { publicRead: boolean; publicUpload: boolean }, asJson: boolean): Promise<void> {
  const created = await client.createBucket(name, { openToRead: flags.publicRead, openToUpload: flags.publicUpload, signal });
  if (asJson) return void json(io, { BucketId: created.BucketId, BucketName: name, OpenToRead: flags.publicRead, OpenToUpload: flags.publicUpload });
  line(io.out, `Created bucket ${printable(name)} (BucketId ${created.BucketId}).`);
}

export async function editBucket(
  io: Io,
  { client, signal }: Session,
  name: string,
  changes: { name?: string | undefined; publicRead?: boolean | undefined; publicUpload?: boolean | undefined },
  asJson: boolean,
): Promise<void> {
  if (changes.name === undefined && changes.publicRead === undefined && changes.publicUpload === undefined) {
    throw new UsageError('Nothing to change: give --name, --public-read or --public-upload.');
  }
  // EditBucket sets the name and both flags: what is not given stays as it is.
  const bucket = await client.viewBucketDetail((await findBucket(client, name, signal)).BucketId, { signal });
  const settings = {
    newBucketName: changes.name ?? bucket.BucketName,
    openToRead: changes.publicRead ?? bucket.OpenToRead,
    openToUpload: changes.publicUpload ?? bucket.OpenToUpload,
  };
  await client.editBucket(bucket.BucketId, { ...settings, signal });
  if (asJson) return void json(io, { BucketId: bucket.BucketId, BucketName: settings.newBucketName, OpenToRead: settings.openToRead, OpenToUpload: settings.openToUpload });
  line(io.out, `Bucket ${printable(settings.newBucketName)}: open to read ${yesNo(settings.openToRead)}, open to upload ${yesNo(settings.openToUpload)}.`);
}

export async function removeBucket(io: Io, { client, signal }: Session, name: string, yes: boolean, asJson: boolean): Promise<void> {
  const bucket = await client.viewBucketDetail((await findBucket(client, name, signal)).BucketId, { signal });
  if (!yes) {
    if (!io.confirm) throw new UsageError(`Deleting ${name} deletes its ${bucket.FileCount} file(s) for good: add --yes.`);
    if (!(await io.confirm(`Delete bucket ${printable(bucket.BucketName)} and its ${bucket.FileCount} file(s) for good? [y/N] `))) {
      line(io.err, 'Nothing deleted.');
      return;
    }
  }
  await client.deleteBucket(bucket.BucketId, { signal });
  if (asJson) return void json(io, { BucketId: bucket.BucketId, BucketName: bucket.BucketName, Deleted: true });
  line(io.out, `Deleted bucket ${printable(bucket.BucketName)} and its ${bucket.FileCount} file(s).`);
}
