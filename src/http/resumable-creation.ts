import type { FastifyRequest } from 'fastify';
import { ApiError, invalid, invalidInput, problems, resumableProblems } from '../errors.js';
import { sanitizeFileName } from '../services/file-names.js';
import type { ResumableTarget } from '../services/resumable-uploads.js';
import { authorizeTokenUpload } from '../services/uploads.js';
import { param, tryBindRequest } from './binding.js';
import { parseMetadata, sizeHeader } from './tus-headers.js';

/** The parameters of every upload, UploadFile's: here from Upload-Metadata and the Bearer header. */
const params = param.upload();

function uploadLength(request: FastifyRequest, items: string[]): number | undefined {
  if (request.headers['upload-defer-length'] !== undefined) {
    items.push(resumableProblems.deferredLength);
    return undefined;
  }
  const length = sizeHeader(request.headers, 'upload-length');
  if (length === undefined) items.push(resumableProblems.uploadLengthRequired);
  else if (length === 'invalid') items.push(resumableProblems.badUploadLength(String(request.headers['upload-length'])));
  return typeof length === 'number' ? length : undefined;
}

/** The metadata's file name (its key matched case-insensitively, like every parameter). */
function metadataFileName(metadata: Record<string, string | string[]>, items: string[]): string | undefined {
  const given = Object.keys(metadata).filter((key) => key.toLowerCase() === 'filename');
  const value = given.length === 1 ? metadata[given[0]!] : undefined;
  if (given.length > 1 || Array.isArray(value)) items.push(problems.givenTwice('filename'));
  else if (value === undefined) items.push(resumableProblems.filenameRequired);
  else if (!sanitizeFileName(value)) items.push(problems.badFileName);
  return typeof value === 'string' ? sanitizeFileName(value) : undefined;
}

/**
 * A creation's refusal with the status the contract gives it: a taken name 409, a token, bucket or
 * permission refused 403; others (validation, storage, the database) keep their own.
 */
export function creationRefusal(error: unknown): unknown {
  if (!(error instanceof ApiError) || error.code !== -1 || error.statusCode !== 200) return error;
  return error.withStatus(error.kind === 'conflict' ? 409 : 403);
}

/**
 * Everything UploadFile checks, before a byte is accepted: the inputs (every problem at once, 400),
 * the size (413), the token (403), the bucket and the permission (403), the name (409).
 */
export async function validateCreation(request: FastifyRequest, maxUploadBytes: number): Promise<ResumableTarget> {
  const items: string[] = [];
  const size = uploadLength(request, items);
  const metadata = parseMetadata(request.headers['upload-metadata'] as string | undefined);
  if (!metadata) items.push(resumableProblems.badMetadata);
  const binding = tryBindRequest(params, request.headers, metadata);
  if (!binding.ok) items.push(...binding.items);
  const fileName = metadata && metadataFileName(metadata, items);
  if (!binding.ok || items.length > 0 || !fileName || size === undefined) throw invalidInput(items, 400);
  if (size > maxUploadBytes) throw invalid.fileTooLarge(maxUploadBytes);

  const bound = binding.value;
  const { appId, bucketId } = await authorizeTokenUpload(request.server.db, bound.AccessToken, bound.BucketId, fileName).catch((error: unknown) => {
    throw creationRefusal(error);
  });
  // The token is a secret: it is not kept, nor echoed by HEAD.
  const kept = Object.fromEntries(Object.entries(metadata).flatMap(([key, value]) => (key.toLowerCase() === 'accesstoken' || Array.isArray(value) ? [] : [[key, value]])));
  return { appId, bucketId, fileName, aliveDays: bound.AliveDays, size, metadata: kept };
}
