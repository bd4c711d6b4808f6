import { postForm, type TestService } from './service.js';

// The bucket operations' answers and calls, as the bucket tests check them.

export const INVALID = 'Your input contains several errors!';
export const NAME_TAKEN = { Code: -1, Message: 'There is one bucket already called that name!' };
export const UNKNOWN = { Code: -1, Message: 'Could not find that bucket.' };
export const NOT_YOURS = { Code: -1, Message: 'This is not your bucket!' };
export const BAD_TOKEN = { Code: -1, Message: 'Invalid or expired AccessToken.' };
export const NAME_CHARACTERS = "may contain only letters, digits, '.', '_' and '-', and must start with a letter or digit.";

/** CreateBucket's answer. */
export async function create(service: TestService, token: string, name: string, openToRead = true, openToUpload = false) {
  const response = await postForm(service.app, '/API/CreateBucket', {
    AccessToken: token,
    BucketName: name,
    OpenToRead: openToRead,
    OpenToUpload: openToUpload,
  });
  return response.json();
}

export function bucketRow(service: TestService, bucketId: number) {
  return service.app.db.selectFrom('buckets').selectAll().where('bucket_id', '=', bucketId).executeTakeFirst();
}

export async function countBuckets(service: TestService, appId?: string) {
  let query = service.app.db.selectFrom('buckets').select((eb) => eb.fn.countAll().as('n'));
  if (appId !== undefined) query = query.where('app_id', '=', appId);
  return Number((await query.executeTakeFirstOrThrow()).n);
}

/** ViewBucketDetail's answer. */
export async function detail(service: TestService, bucketId: number) {
  return (await service.app.inject({ url: `/API/ViewBucketDetail?BucketId=${bucketId}` })).json();
}
