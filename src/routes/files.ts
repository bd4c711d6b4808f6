import type { FastifyInstance } from 'fastify';
import { accessTokenParam } from '../../plugins/auth.js';
import { defineOperation, field, MAX_ID } from '../../plugins/validation.js';
import { invalidInput } from '../errors.js';
import { deleteFile, fileView, findLiveFile, findLiveFiles, listBucketFiles } from '../services/files.js';
import { publicBaseUrl } from './public-url.js';
import { fileSchema } from './schemas.js';

export const MAX_IDS = 1000;

/** `Ids`: comma-separated FileKeys; blanks around and between entries are ignored. */
export function parseIds(raw: string): number[] {
  const entries = raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  if (entries.length > MAX_IDS) throw invalidInput([`The field Ids may list at most ${MAX_IDS} FileKeys.`]);
  const bad = entries.filter((entry) => !/^\d{1,16}$/.test(entry) || !Number.isSafeInteger(Number(entry)) || Number(entry) < 1);
  if (bad.length > 0) {
    throw invalidInput(bad.slice(0, 10).map((entry) => `The value '${entry.slice(0, 40)}' is not a valid FileKey in Ids.`));
  }
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
    params: { FileKey: field.integer({ minimum: 1, maximum: MAX_ID }) },
    handler: async ({ FileKey }, request) => {
      const row = await findLiveFile(fastify.db, FileKey);
      return { File: fileView(row, publicBaseUrl(request), counter.pending(row.file_key)), Message: 'Successfully get that file.' };
    },
  });

  defineOperation(fastify, {
    name: 'ViewMultiFiles',
    method: 'GET',
    summary: 'Live files by comma-separated FileKeys, in the order asked; unknown ones are left out.',
    tag: 'Files',
    response: { Items: { type: 'array', items: fileSchema } },
    params: { Ids: field.text({ maxLength: 64 * 1024 }) },
    handler: async ({ Ids }, request) => {
      const rows = await findLiveFiles(fastify.db, parseIds(Ids));
      const base = publicBaseUrl(request);
      return { Items: rows.map((row) => fileView(row, base, counter.pending(row.file_key))), Message: 'Successfully get those files.' };
    },
  });

  defineOperation(fastify, {
    name: 'ViewAllFiles',
    method: 'GET',
    summary: "A bucket's live files: the owner's, or any app's when the bucket is OpenToRead.",
    tag: 'Files',
    response: { BucketId: { type: 'integer' }, AllFiles: { type: 'array', items: fileSchema } },
    params: { AccessToken: accessTokenParam(), BucketId: field.integer({ minimum: 1, maximum: MAX_ID }) },
    handler: async ({ AccessToken, BucketId }, request) => {
      const appId = await fastify.appForToken(AccessToken);
      const rows = await listBucketFiles(fastify.db, appId, BucketId);
      const base = publicBaseUrl(request);
      return { BucketId, AllFiles: rows.map((row) => fileView(row, base, counter.pending(row.file_key))), Message: 'Successfully get all files.' };
    },
  });

  defineOperation(fastify, {
    name: 'DeleteFile',
    method: 'POST',
    summary: "Deletes one of the app's own files; it stops being served at once.",
    tag: 'Files',
    params: { AccessToken: accessTokenParam(), FileKey: field.integer({ minimum: 1, maximum: MAX_ID }) },
    handler: async ({ AccessToken, FileKey }, request) => {
      const appId = await fastify.appForToken(AccessToken);
      await fastify.dropBlobs([await deleteFile(fastify.db, appId, FileKey)], request.log);
      return { Message: 'Successfully deleted your file!' };
    },
  });
}
