import type { FastifyInstance } from 'fastify';
import { succeeded } from '../errors.js';
import { bucketNameProblem, createBucket, deleteBucket, editBucket, listBuckets, viewBucket, type BucketSettings } from '../services/buckets.js';
import { appForToken } from '../services/tokens.js';
import { admitHeavy } from './admission.js';
import { bucketView } from './views.js';
import { field, param } from './binding.js';
import { contextOf } from './context.js';
import { defineOperation } from './operation.js';
import { bucketFields, bucketSchema } from './schemas.js';
import { exampleAppId, exampleBucket } from './examples.js';

const bucketName = (description: string) => field.text({ check: bucketNameProblem, description });
/** The two access flags, which CreateBucket and EditBucket both set. */
const flags = {
  OpenToRead: field.boolean('Anyone may download its files.'),
  OpenToUpload: field.boolean('Any app may upload into it.'),
};
const settings = (name: string, bound: { OpenToRead: boolean; OpenToUpload: boolean }): BucketSettings => ({
  name,
  openToRead: bound.OpenToRead,
  openToUpload: bound.OpenToUpload,
});

/** CreateBucket, EditBucket, ViewBucketDetail, DeleteBucket and ViewMyBuckets. */
export default async function bucketRoutes(fastify: FastifyInstance): Promise<void> {
  defineOperation(fastify, {
    name: 'CreateBucket',
    method: 'POST',
    summary: 'Create a bucket owned by the token’s app.',
    tag: 'Buckets',
    response: { BucketId: { type: 'integer' } },
    params: { AccessToken: param.accessToken(), BucketName: bucketName('5 to 25 of A-Z a-z 0-9 . _ -, unique across all apps.'), ...flags },
    example: { request: { BucketName: 'holiday-photos', OpenToRead: true, OpenToUpload: false }, response: { BucketId: 1, Message: succeeded.bucketCreated } },
    handler: async (params) => {
      const appId = await appForToken(fastify.db, params.AccessToken);
      const id = await createBucket(fastify.db, appId, settings(params.BucketName, params));
      return { BucketId: id, Message: succeeded.bucketCreated };
    },
  });

  defineOperation(fastify, {
    name: 'EditBucket',
    method: 'POST',
    summary: 'Rename a bucket of the token’s app and set both of its flags.',
    tag: 'Buckets',
    params: { AccessToken: param.accessToken(), BucketId: param.bucketId(), NewBucketName: bucketName('The new name (may be the current one).'), ...flags },
    example: { request: { BucketId: 1, NewBucketName: 'holiday-2026', OpenToRead: true, OpenToUpload: false }, response: { Message: succeeded.bucketEdited } },
    handler: async (params) => {
      const appId = await appForToken(fastify.db, params.AccessToken);
      await editBucket(fastify.db, appId, params.BucketId, settings(params.NewBucketName, params));
      return { Message: succeeded.bucketEdited };
    },
  });

  defineOperation(fastify, {
    name: 'ViewBucketDetail',
    method: 'GET',
    summary: 'One bucket’s fields; needs no token.',
    tag: 'Buckets',
    response: bucketFields,
    params: { BucketId: param.bucketId() },
    example: { request: { BucketId: 1 }, response: { ...exampleBucket, Message: succeeded.bucketDetail } },
    handler: async ({ BucketId }) => ({ ...bucketView(await viewBucket(fastify.db, BucketId)), Message: succeeded.bucketDetail }),
  });

  defineOperation(fastify, {
    name: 'DeleteBucket',
    method: 'POST',
    summary: 'Delete a bucket of the token’s app with all its files.',
    tag: 'Buckets',
    params: { AccessToken: param.accessToken(), BucketId: param.bucketId() },
    example: { request: { BucketId: 1 }, response: { Message: succeeded.bucketDeleted } },
    handler: async ({ AccessToken, BucketId }, request, reply) => {
      const appId = await appForToken(fastify.db, AccessToken);
      await admitHeavy(request, reply, appId);
      await deleteBucket(contextOf(request), appId, BucketId);
      return { Message: succeeded.bucketDeleted };
    },
  });

  defineOperation(fastify, {
    name: 'ViewMyBuckets',
    method: 'GET',
    summary: 'The token’s app and its buckets, ordered by BucketId.',
    tag: 'Buckets',
    response: { AppId: { type: 'string' }, Buckets: { type: 'array', items: bucketSchema } },
    params: { AccessToken: param.accessToken() },
    example: { request: {}, response: { AppId: exampleAppId, Buckets: [exampleBucket], Message: succeeded.buckets } },
    handler: async ({ AccessToken }, request, reply) => {
      const appId = await appForToken(fastify.db, AccessToken);
      // An app's buckets are not bounded in number, and each carries its FileCount.
      await admitHeavy(request, reply, appId);
      return { AppId: appId, Buckets: (await listBuckets(fastify.db, appId)).map(bucketView), Message: succeeded.buckets };
    },
  });
}
