import type { FastifyInstance } from 'fastify';
import { accessTokenParam as accessToken } from '../../plugins/auth.js';
import { defineOperation, field, MAX_ID } from '../../plugins/validation.js';
import { bucketFields, bucketSchema } from './schemas.js';
import {
  bucketNameProblem,
  createBucket,
  deleteBucket,
  editBucket,
  listBuckets,
  viewBucket,
} from '../services/buckets.js';

const bucketId = () => field.integer({ minimum: 1, maximum: MAX_ID, description: 'The bucket.' });
const bucketName = (description: string) => field.text({ check: bucketNameProblem, description });

/** CreateBucket, EditBucket, ViewBucketDetail, DeleteBucket and ViewMyBuckets. */
export default async function bucketRoutes(fastify: FastifyInstance): Promise<void> {
  defineOperation(fastify, {
    name: 'CreateBucket',
    method: 'POST',
    summary: 'Create a bucket owned by the token’s app.',
    tag: 'Buckets',
    response: { BucketId: { type: 'integer' } },
    params: {
      AccessToken: accessToken(),
      BucketName: bucketName('5 to 25 of A-Z a-z 0-9 . _ -, unique across all apps.'),
      OpenToRead: field.boolean('Anyone may download its files.'),
      OpenToUpload: field.boolean('Any app may upload into it.'),
    },
    handler: async (params) => {
      const appId = await fastify.appForToken(params.AccessToken);
      const id = await createBucket(fastify.db, appId, {
        name: params.BucketName,
        openToRead: params.OpenToRead,
        openToUpload: params.OpenToUpload,
      });
      return { BucketId: id, Message: 'Successfully created your bucket!' };
    },
  });

  defineOperation(fastify, {
    name: 'EditBucket',
    method: 'POST',
    summary: 'Rename a bucket of the token’s app and set both of its flags.',
    tag: 'Buckets',
    params: {
      AccessToken: accessToken(),
      BucketId: bucketId(),
      NewBucketName: bucketName('The new name (may be the current one).'),
      OpenToRead: field.boolean('Anyone may download its files.'),
      OpenToUpload: field.boolean('Any app may upload into it.'),
    },
    handler: async (params) => {
      const appId = await fastify.appForToken(params.AccessToken);
      await editBucket(fastify.db, appId, params.BucketId, {
        name: params.NewBucketName,
        openToRead: params.OpenToRead,
        openToUpload: params.OpenToUpload,
      });
      return { Message: 'Successfully edited your bucket!' };
    },
  });

  defineOperation(fastify, {
    name: 'ViewBucketDetail',
    method: 'GET',
    summary: 'One bucket’s fields; needs no token.',
    tag: 'Buckets',
    response: bucketFields,
    params: { BucketId: bucketId() },
    handler: async ({ BucketId }) => ({
      ...(await viewBucket(fastify.db, BucketId)),
      Message: 'Successfully get your bucket detail!',
    }),
  });

  defineOperation(fastify, {
    name: 'DeleteBucket',
    method: 'POST',
    summary: 'Delete a bucket of the token’s app with all its files.',
    tag: 'Buckets',
    params: { AccessToken: accessToken(), BucketId: bucketId() },
    handler: async ({ AccessToken, BucketId }, request) => {
      const appId = await fastify.appForToken(AccessToken);
      await deleteBucket(fastify.db, appId, BucketId, (keys) => fastify.dropBlobs(keys, request.log));
      return { Message: 'Successfully deleted your bucket!' };
    },
  });

  defineOperation(fastify, {
    name: 'ViewMyBuckets',
    method: 'GET',
    summary: 'The token’s app and its buckets, ordered by BucketId.',
    tag: 'Buckets',
    response: { AppId: { type: 'string' }, Buckets: { type: 'array', items: bucketSchema } },
    params: { AccessToken: accessToken() },
    handler: async ({ AccessToken }) => {
      const appId = await fastify.appForToken(AccessToken);
      return { AppId: appId, Buckets: await listBuckets(fastify.db, appId), Message: 'Successfully get your buckets!' };
    },
  });
}
