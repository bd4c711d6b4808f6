import { Metadata } from '@tus/utils';
import type { FastifyRequest } from 'fastify';
import { ApiError, invalid, invalidInput, problems, refused, resumableProblems } from '../errors.js';
import { sanitizeFileName } from '../services/file-names.js';
import type { ResumableTarget } from '../services/resumable-uploads.js';
import { authorizeTokenUpload } from '../services/uploads.js';
import { bindParameters, field, param } from './binding.js';

const params = {
  AccessToken: param.accessToken(),
  BucketId: param.bucketId(),
  AliveDays: field.integer({ minimum: 1, maximum: 18250 }),
};

/** The Items of a validation failure, with the status the contract gives creation refusals. */
const badRequest = (items: string[]) => invalidInput(items, 400);

/** One header's value; a header sent twice counts as its first. */
function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The Bearer token of the Authorization header, if there is one. */
function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  return header ? (/^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] ?? '') : undefined;
}

/** Metadata keys are matched case-insensitively, like the parameters of the other operations. */
function metadataOf(request: FastifyRequest, items: string[]): Record<string, string | null> {
  const raw = header(request, 'upload-metadata');
  if (raw === undefined || raw.trim() === '') return {};
  try {
    return Metadata.parse(raw);
  } catch {
    items.push(resumableProblems.badMetadata);
    return {};
  }
}

function uploadLength(request: FastifyRequest, items: string[]): number | undefined {
  if (request.headers['upload-defer-length'] !== undefined) {
    items.push(resumableProblems.deferredLength);
    return undefined;
  }
  const raw = header(request, 'upload-length');
  if (raw === undefined) {
    items.push(resumableProblems.uploadLengthRequired);
    return undefined;
  }
  if (!/^\d{1,16}$/.test(raw.trim()) || !Number.isSafeInteger(Number(raw))) {
    items.push(resumableProblems.badUploadLength(raw));
    return undefined;
  }
  return Number(raw);
}

/**
 * Everything UploadFile checks, before a byte is accepted: the inputs (every problem at once, 400),
 * the size (413), the token (403), the bucket and the permission (403), the name (409).
 */
export async function validateCreation(request: FastifyRequest, maxUploadBytes: number): Promise<ResumableTarget> {
  const items: string[] = [];
  const size = uploadLength(request, items);
  const metadata = metadataOf(request, items);
  const lowered = Object.fromEntries(Object.entries(metadata).map(([key, value]) => [key.toLowerCase(), value ?? '']));
  const bearer = bearerToken(request);
  if (bearer !== undefined && lowered.accesstoken !== undefined && lowered.accesstoken !== bearer) items.push(resumableProblems.tokenTwice);
  let bound: ReturnType<typeof bindParameters<typeof params>> | undefined;
  try {
    bound = bindParameters(params, { ...lowered, ...(bearer !== undefined ? { accesstoken: bearer } : {}) });
  } catch (error) {
    if (!(error instanceof ApiError) || !error.items) throw error;
    items.push(...error.items);
  }
  const fileName = lowered.filename === undefined ? undefined : sanitizeFileName(lowered.filename);
  if (lowered.filename === undefined) items.push(resumableProblems.filenameRequired);
  else if (!fileName) items.push(problems.badFileName);
  if (items.length > 0 || !bound || !fileName || size === undefined) throw badRequest(items);
  if (size > maxUploadBytes) throw invalid.fileTooLarge(maxUploadBytes);

  const rethrow = (error: unknown): never => {
    throw asCreationRefusal(error);
  };
  const { appId, ...bucket } = await authorizeTokenUpload(request.server.db, bound.AccessToken, bound.BucketId, fileName).catch(rethrow);
  // The token is a secret: it is not kept, nor echoed by HEAD.
  const kept = Object.fromEntries(Object.entries(metadata).filter(([key]) => key.toLowerCase() !== 'accesstoken'));
  return { appId, bucketId: bucket.bucketId, fileName, aliveDays: bound.AliveDays, size, metadata: kept };
}

/**
 * A refusal of the token or the bucket is 403 for a resumable upload, a taken name 409 (at
 * creation and at completion); both keep their Message. Anything else is returned as it is.
 */
export function asCreationRefusal(error: unknown): unknown {
  if (!(error instanceof ApiError) || error.code !== -1 || error.statusCode !== 200) return error;
  const status = error.message === refused.fileNameTaken().message ? 409 : 403;
  return new ApiError(-1, error.message, status);
}
