import type { FastifyInstance } from 'fastify';
import { MAX_ID } from '../../plugins/validation.js';
import { RESERVED_BUCKET_NAMES } from '../services/buckets.js';
import { findPublicFileByKey, findPublicFileByPath } from '../services/downloads.js';
import { downloadRouteOptions, fileNotFound, serveFile, setSafetyHeaders } from './serve-file.js';

const RESERVED = new Set(RESERVED_BUCKET_NAMES.map((name) => name.toLowerCase()));
/** `12` or `12.png`: the extension is decoration, the key alone names the file. */
const KEY_WITH_EXTENSION = /^(\d{1,16})(\.[^/]*)?$/;
/** Files of OpenToRead buckets may be cached, but must be revalidated, so a deleted file is not served on. */
const PUBLIC_CACHING = 'public, no-cache';

/** Public downloads (GET and HEAD): the InternetPath `/<BucketName>/<RealFileName>` and `/Download/FromKey/<FileKey>`. */
export default async function downloadRoutes(fastify: FastifyInstance): Promise<void> {
  fastify.get<{ Params: { key: string } }>(
    '/Download/FromKey/:key',
    downloadRouteOptions('Download a file of an OpenToRead bucket by its FileKey (an extension after the key is allowed).'),
    async (request, reply) => {
      setSafetyHeaders(reply);
      const fileKey = Number(KEY_WITH_EXTENSION.exec(request.params.key)?.[1]);
      const file = fileKey >= 1 && fileKey <= MAX_ID ? await findPublicFileByKey(fastify.db, fileKey) : undefined;
      if (!file) throw fileNotFound();
      return serveFile(request, reply, file, PUBLIC_CACHING);
    },
  );

  // Static routes win in the router, but one that does not match (`/API/NoSuchOperation`) falls
  // back to this one: the service's own top-level names are never taken as a bucket name.
  fastify.get<{ Params: { bucket: string; file: string } }>(
    '/:bucket/:file',
    downloadRouteOptions('Download a file of an OpenToRead bucket at its InternetPath.'),
    async (request, reply) => {
      const { bucket, file: fileName } = request.params;
      if (RESERVED.has(bucket.toLowerCase())) return reply.callNotFound();
      setSafetyHeaders(reply);
      const file = await findPublicFileByPath(fastify.db, bucket, fileName);
      if (!file) throw fileNotFound();
      return serveFile(request, reply, file, PUBLIC_CACHING);
    },
  );
}
