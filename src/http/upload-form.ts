import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { Multipart, MultipartFile } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { ApiError, invalid, invalidInput, problems } from '../errors.js';
import { isStorageError } from '../storage/errors.js';

/** Reads the rest of a stream and throws it away, so nothing upstream waits for a reader that is gone. */
export async function drain(stream: Readable): Promise<void> {
  stream.resume();
  await finished(stream).catch(() => {});
}

/** An error of reading an upload (the parser's, the source's or the store's), as the client should see it. */
export function uploadError(error: unknown, maxBytes: number): unknown {
  if (error instanceof ApiError) return error;
  if (isStorageError(error)) return error.kind === 'too-large' ? invalid.fileTooLarge(maxBytes) : error;
  switch ((error as { code?: string }).code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return invalid.fileTooLarge(maxBytes);
    case 'FST_FILES_LIMIT':
      return invalidInput([problems.oneFilePart]);
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return invalidInput([problems.tooManyParts], 413);
    case 'FST_PROTO_VIOLATION':
      return invalidInput([problems.badFieldName]);
    default:
      // Malformed framing, a part cut short, or a client that went away mid-body.
      return invalidInput([problems.unreadableMultipart]);
  }
}

/**
 * A multipart/form-data body read part by part: its fields are collected as they come (before and
 * after the file), the first file part is handed out as a stream, and any further file part is
 * counted and drained.
 */
export class UploadForm {
  /** The form fields read so far; a name given twice becomes a list, which binding reports as ambiguous. */
  readonly fields: Record<string, unknown> = Object.create(null);
  fileParts = 0;
  readonly #parts: AsyncIterator<Multipart>;

  constructor(
    request: FastifyRequest,
    private readonly maxBytes: number,
  ) {
    this.#parts = request.parts()[Symbol.asyncIterator]();
  }

  /** Reads fields up to the first file part and returns it; undefined when the form ends first. */
  async nextFile(): Promise<MultipartFile | undefined> {
    for (;;) {
      const part = await this.#next();
      if (part === undefined) return undefined;
      if (part.type === 'file') {
        this.fileParts += 1;
        return part;
      }
    }
  }

  /** Reads the rest of the form: the fields after the file, and any further file part drained. */
  async readRest(): Promise<void> {
    for (;;) {
      const file = await this.nextFile();
      if (file === undefined) return;
      await drain(file.file);
    }
  }

  async #next(): Promise<Multipart | undefined> {
    let next: IteratorResult<Multipart>;
    try {
      next = await this.#parts.next();
    } catch (error) {
      throw uploadError(error, this.maxBytes);
    }
    if (next.done) return undefined;
    const part = next.value;
    if (part.type === 'field') {
      // A value cut at the field size limit is still far past any parameter's own limit.
      const previous = this.fields[part.fieldname];
      this.fields[part.fieldname] = previous === undefined ? part.value : [previous, part.value].flat();
    }
    return part;
  }
}
