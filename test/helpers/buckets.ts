import { postForm, type TestService } from './service.js';

/** Bucket names are unique across all apps (and test files share a server): each test takes its own. */
let counter = 0;
export const uniqueBucketName = (prefix = 'bucket') => `${prefix}-${process.pid}-${++counter}`.slice(0, 25);

export interface BucketOptions {
  name?: string;
  openToRead?: boolean;
  openToUpload?: boolean;
}

/** Creates a bucket through the API and returns its BucketId. */
export async function createBucket(service: TestService, token: string, options: BucketOptions = {}): Promise<number> {
  const response = await postForm(service.app, '/API/CreateBucket', {
    AccessToken: token,
    BucketName: options.name ?? uniqueBucketName(),
    OpenToRead: options.openToRead ?? true,
    OpenToUpload: options.openToUpload ?? false,
  });
  const body = response.json();
  if (body.Code !== 0) throw new Error(`CreateBucket failed: ${response.body}`);
  return body.BucketId as number;
}
