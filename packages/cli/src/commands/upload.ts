import { readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { FileStoreError } from '@filestore/client';
import { describeError, humanSize, json, line, printable, UsageError, type Io } from '../output.js';
import { progressFor } from '../progress.js';
import { findBucket } from '../resolve.js';
import type { openSession } from '../session.js';
import { UploadState } from '../upload-state.js';

type Session = Awaited<ReturnType<typeof openSession>>;

interface Planned {
  path: string;
  size: number;
  modified: number;
}

/** The files named: each path a file, or a folder's files (at any depth) with --recursive. */
async function plan(paths: string[], recursive: boolean): Promise<Planned[]> {
  const files: Planned[] = [];
  const visit = async (entry: string, named: boolean) => {
    const info = await stat(entry).catch((error: NodeJS.ErrnoException) => {
      throw new UsageError(error.code === 'ENOENT' ? `${entry}: no such file or folder.` : `${entry}: ${error.message}`);
    });
    if (info.isDirectory()) {
      if (!recursive) throw new UsageError(`${entry} is a folder: add --recursive to upload its files.`);
      const names = (await readdir(entry)).sort();
      for (const name of names) await visit(path.join(entry, name), false);
    } else if (info.isFile()) {
      files.push({ path: entry, size: info.size, modified: info.mtimeMs });
    } else if (named) {
      throw new UsageError(`${entry} is not a file.`);
    }
  };
  for (const entry of paths) await visit(entry, true);
  return files;
}

/** Runs `task` over the items, at most `limit` at once. */
async function eachLimited<T>(items: T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

export interface UploadFlags {
  days: number;
  recursive: boolean;
  concurrency: number;
  json: boolean;
}

/**
 * `upload BUCKET PATH...`: each file resumably when large (the SDK's threshold), several at once,
 * a bar per file and one for the whole on a terminal. Ctrl-C leaves the unfinished uploads where
 * they are; the same command again resumes them.
 */
export async function upload(io: Io, { client, login, signal }: Session, bucketName: string, paths: string[], flags: UploadFlags): Promise<boolean> {
  const files = await plan(paths, flags.recursive);
  if (files.length === 0) throw new UsageError('No files to upload.');
  const bucket = await findBucket(client, bucketName, signal);
  const state = await UploadState.open(io.env);
  const progress = progressFor(io);
  let totalBytes = files.reduce((sum, file) => sum + file.size, 0);
  const overall = files.length > 1 ? progress.overall(totalBytes) : undefined;
  const sentOf = new Map<string, number>();
  const uploaded: Array<{ File: string; FileKey: number; Path: string; Size: number }> = [];
  const failed: Array<{ File: string } & ReturnType<typeof describeError>> = [];

  await eachLimited(files, flags.concurrency, async (file) => {
    if (signal.aborted) return;
    const name = path.basename(file.path);
    const key = UploadState.key({ service: login.url, bucketId: bucket.BucketId, path: await realpath(file.path), size: file.size, modified: file.modified, name });
    const bar = progress.bar(printable(name), file.size);
    const resumeFrom = state.get(key);
    let first = true;
    try {
      const result = await client.uploadFile(bucket.BucketId, { path: file.path }, {
        aliveDays: flags.days,
        resumeFrom,
        signal,
        onUploadUrl: (url) => void state.set(key, url),
        onProgress: ({ sent }) => {
          if (first && resumeFrom && sent > 0) progress.note(`Resuming ${printable(name)} at ${humanSize(sent)}.`);
          first = false;
          bar.update(sent);
          sentOf.set(file.path, sent);
          overall?.update([...sentOf.values()].reduce((sum, bytes) => sum + bytes, 0));
        },
      });
      await state.forget(key);
      bar.update(file.size);
      uploaded.push({ File: file.path, FileKey: result.FileKey, Path: result.Path, Size: file.size });
      if (!flags.json) progress.result(`Uploaded ${printable(file.path)} as ${result.FileKey} (${humanSize(file.size)}): ${result.Path}`);
    } catch (error) {
      if (signal.aborted) return;
      bar.fail();
      // The whole is what is left to upload: a failed file no longer counts in it.
      totalBytes -= file.size;
      sentOf.delete(file.path);
      overall?.setTotal(totalBytes);
      overall?.update([...sentOf.values()].reduce((sum, bytes) => sum + bytes, 0));
      // The service refused it: its upload URL (if any) leads nowhere now.
      if (error instanceof FileStoreError && error.status !== 0) await state.forget(key);
      failed.push({ File: file.path, ...describeError(error) });
      if (!flags.json) {
        const { Message, Items } = describeError(error);
        progress.problem([`filestore: ${printable(file.path)}: ${printable(Message)}`, ...(Items ?? []).map((item) => `  - ${printable(item)}`)].join('\n'));
      }
    } finally {
      bar.stop();
    }
  });
  progress.stop();
  await state.flush();
  signal.throwIfAborted();
  if (flags.json) json(io, { Uploaded: uploaded, Failed: failed });
  else if (files.length > 1) line(io.out, `${uploaded.length} of ${files.length} file(s) uploaded, ${humanSize(uploaded.reduce((sum, file) => sum + file.Size, 0))}.`);
  return failed.length === 0;
}
