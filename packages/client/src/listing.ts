import type { ClientContext } from './context.js';
import { EXPIRED_TOKEN_MESSAGE } from './errors.js';
import { ArrayScanner } from './file-list.js';
import { OPERATIONS } from './operations.js';
import { checkParams } from './params.js';
import { backoff, errorOf, readEnvelope, send, sleep, unreachable } from './transport.js';
import type { StoredFile } from './types.js';

/**
 * ViewAllFiles read as it streams: files are yielded as they arrive. A connection that breaks
 * midway is asked again, and the files already yielded (ordered by FileKey) are skipped.
 */
export async function* listFiles(ctx: ClientContext, bucketId: number, signal?: AbortSignal): AsyncGenerator<StoredFile> {
  checkParams(OPERATIONS.ViewAllFiles.params, { BucketId: bucketId });
  const { transport, tokens } = ctx;
  const url = new URL(OPERATIONS.ViewAllFiles.path.slice(1), transport.baseUrl);
  url.search = new URLSearchParams({ BucketId: String(bucketId) }).toString();
  let last = 0;
  let renewed = false;
  for (let attempt = 0; ; attempt++) {
    const token = await tokens.get(signal);
    const response = await send(transport, url, () => ({ headers: { Authorization: `Bearer ${token}` } }), { signal, idempotent: true });
    if (response.status !== 200 || !response.body) throw errorOf(response, await readEnvelope(response));
    const scanner = new ArrayScanner<StoredFile>('AllFiles');
    const decoder = new TextDecoder();
    const reader = response.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        const files = scanner.push(done ? decoder.decode() : decoder.decode(value, { stream: true }));
        for (const file of files) {
          if (file.FileKey <= last) continue;
          last = file.FileKey;
          yield file;
        }
        if (done) break;
      }
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (attempt >= transport.retry.retries) throw unreachable(url, error);
      await sleep(backoff(transport.retry, attempt), signal);
      continue;
    } finally {
      reader.releaseLock();
      await response.body.cancel().catch(() => {});
    }
    const envelope = scanner.rest() as { Code?: unknown; Message?: unknown; Items?: unknown };
    if (envelope.Code === 0) return;
    const error = errorOf(response, envelope);
    if (renewed || error.message !== EXPIRED_TOKEN_MESSAGE || !tokens.canRenew) throw error;
    renewed = true;
    tokens.refused(token);
  }
}
