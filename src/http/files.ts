import type { FastifyInstance } from 'fastify';
import { invalidInput, problems, succeeded } from '../errors.js';
import { authorizeListing, deleteFile, findLiveFile, findLiveFiles, liveFilePages } from '../services/files.js';
import { fileView } from './views.js';
import { appForToken } from '../services/tokens.js';
import { admitHeavy } from './admission.js';
import { field, param } from './binding.js';
import { contextOf } from './context.js';
import { streamJsonObject } from './json-stream.js';
import { defineOperation } from './operation.js';
import { publicBaseUrl } from './public-url.js';
import { fileSchema } from './schemas.js';
import { exampleFile, otherExampleFile } from './examples.js';

export const MAX_IDS = 1000;

/** `Ids`: comma-separated FileKeys; blanks around and between entries are ignored. */
export function parseIds(raw: string): number[] {
  const entries = raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  if (entries.length > MAX_IDS) throw invalidInput([problems.tooManyIds(MAX_IDS)]);
  const bad = entries.filter((entry) => !/^\d{1,16}$/.test(entry) || !Number.isSafeInteger(Number(entry)) || Number(entry) < 1);
  if (bad.length > 0) throw invalidInput(bad.slice(0, 10).map(problems.badIdInIds));
  return entries.map(Number);
}

/** The read and delete operations on files; UploadFile lives in upload.ts. */
export default async function fileRoutes(fastify: FastifyInstance): Promise<void> {
  // This instance's downloads not yet flushed: a client sees its own download counted at once.
  const counter = fastify.downloadCounter;

  defineOperation(fastify, {
    name: 'ViewOneFile',
    method: 'GET',
    summary: 'One live file by its FileKey; no token needed.',
    tag: 'Files',
    response: { File: fileSchema },
    params: { FileKey: param.fileKey() },
    example: { request: { FileKey: 7 }, response: { File: exampleFile, Message: succeeded.file } },
    handler: async ({ FileKey }, request) => {
      const row = await findLiveFile(fastify.db, FileKey);
      return { File: fileView(row, publicBaseUrl(request), counter.pending(row.file_key)), Message: succeeded.file };
    },
  });

  defineOperation(fastify, {
    name: 'ViewMultiFiles',
    method: 'GET',
    summary: 'Live files by comma-separated FileKeys, in the order asked; unknown ones are left out.',
    tag: 'Files',
    response: { Items: { type: 'array', items: fileSchema } },
    params: { Ids: field.text({ maxLength: 64 * 1024, description: 'Comma-separated FileKeys, up to 1000.' }) },
    example: { request: { Ids: '8,7' }, response: { Items: [otherExampleFile, exampleFile], Message: succeeded.files } },
    handler: async ({ Ids }, request) => {
      const rows = await findLiveFiles(fastify.db, parseIds(Ids));
      const base = publicBaseUrl(request);
      return { Items: rows.map((row) => fileView(row, base, counter.pending(row.file_key))), Message: succeeded.files };
    },
  });

  defineOperation(fastify, {
    name: 'ViewAllFiles',
    method: 'GET',
    summary: "A bucket's live files: the owner's, or any app's when the bucket is OpenToRead.",
    tag: 'Files',
    response: { BucketId: { type: 'integer' }, AllFiles: { type: 'array', items: fileSchema } },
    params: { AccessToken: param.accessToken(), BucketId: param.bucketId() },
    example: { request: { BucketId: 1 }, response: { BucketId: 1, AllFiles: [exampleFile, otherExampleFile], Message: succeeded.allFiles } },
    handler: async ({ AccessToken, BucketId }, request, reply) => {
      const appId = await appForToken(fastify.db, AccessToken);
      await admitHeavy(request, reply, appId);
      await authorizeListing(fastify.db, appId, BucketId);
      const base = publicBaseUrl(request);
      const views = async function* () {
        for await (const rows of liveFilePages(fastify.db, BucketId)) yield rows.map((row) => fileView(row, base, counter.pending(row.file_key)));
      };
      // The same bytes as the object { BucketId, AllFiles, Message, Code } would give, a page at a time.
      return streamJsonObject({ BucketId }, 'AllFiles', views(), { Message: succeeded.allFiles, Code: 0 });
    },
  });

  defineOperation(fastify, {
    name: 'DeleteFile',
    method: 'POST',
    summary: "Deletes one of the app's own files; it stops being served at once.",
    tag: 'Files',
    params: { AccessToken: param.accessToken(), FileKey: param.fileKey() },
    example: { request: { FileKey: 7 }, response: { Message: succeeded.fileDeleted } },
    handler: async ({ AccessToken, FileKey }, request) => {
      const appId = await appForToken(fastify.db, AccessToken);
      await deleteFile(contextOf(request), appId, FileKey);
      return { Message: succeeded.fileDeleted };
    },
  });
}
