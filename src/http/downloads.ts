import type { FastifyInstance } from 'fastify';
import { refused } from '../errors.js';
import { isReservedName } from '../services/buckets.js';
import { findPublicFileByKey, findPublicFileByPath } from '../services/downloadable-files.js';
import { MAX_ID } from './binding.js';
import { downloadSchema } from './download-docs.js';
import { downloadRoute, sendDownload, setSafetyHeaders } from './download-reply.js';
import { imageOptionsOf } from './image-request.js';

/** `12` or `12.png`: the extension is decoration, the key alone names the file. */
const KEY_WITH_EXTENSION = /^(\d{1,16})(\.[^/]*)?$/;
/** Files of OpenToRead buckets may be cached, but must be revalidated, so a deleted file is not served on. */
const PUBLIC_CACHING = 'public, no-cache';

/** Public downloads (GET and HEAD): the InternetPath `/<BucketName>/<RealFileName>` and `/Download/FromKey/<FileKey>`. */
export default async function downloadRoutes(fastify: FastifyInstance): Promise<void> {
  fastify.route<{ Params: { key: string } }>({
    url: '/Download/FromKey/:key',
    ...downloadRoute(
      downloadSchema('DownloadFromKey', 'Download a file of an OpenToRead bucket by its FileKey (an extension after the key is allowed).', {
        params: { type: 'object', properties: { key: { type: 'string', description: 'The FileKey, optionally with an extension (`7.jpg`).', examples: ['7'] } }, required: ['key'] },
      }),
    ),
    handler: async (request, reply) => {
      setSafetyHeaders(reply);
      const image = imageOptionsOf(request);
      const fileKey = Number(KEY_WITH_EXTENSION.exec(request.params.key)?.[1]);
      const file = fileKey >= 1 && fileKey <= MAX_ID ? await findPublicFileByKey(fastify.db, fileKey) : undefined;
      if (!file) throw refused.downloadNotFound();
      return sendDownload(request, reply, file, PUBLIC_CACHING, image);
    },
  });

  // Static routes win in the router, but one that does not match (`/API/NoSuchOperation`) falls
  // back to this one: the service's own top-level names are never taken as a bucket name.
  fastify.route<{ Params: { bucket: string; file: string } }>({
    url: '/:bucket/:file',
    ...downloadRoute(
      downloadSchema('DownloadFromPath', 'Download a file of an OpenToRead bucket at its InternetPath.', {
        params: {
          type: 'object',
          properties: {
            bucket: { type: 'string', description: 'The BucketName.', examples: ['holiday-photos'] },
            file: { type: 'string', description: 'The RealFileName, percent-encoded.', examples: ['beach 2026.jpg'] },
          },
          required: ['bucket', 'file'],
        },
      }),
    ),
    handler: async (request, reply) => {
      const { bucket, file: fileName } = request.params;
      if (isReservedName(bucket)) return reply.callNotFound();
      setSafetyHeaders(reply);
      const image = imageOptionsOf(request);
      const file = await findPublicFileByPath(fastify.db, bucket, fileName);
      if (!file) throw refused.downloadNotFound();
      return sendDownload(request, reply, file, PUBLIC_CACHING, image);
    },
  });
}
