import { FileStoreError } from './errors.js';

export interface RetryOptions {
  /** Further attempts after the first (default 4). */
  retries?: number;
  /** The first wait when the service gave no Retry-After; doubled each time (default 250 ms). */
  baseDelayMs?: number;
  /** The longest wait; a Retry-After beyond it is not waited for, the answer is the error (default 30 s). */
  maxDelayMs?: number;
}

export interface Transport {
  readonly baseUrl: URL;
  readonly fetch: typeof fetch;
  readonly retry: Required<RetryOptions>;
}

export interface SendOptions {
  signal?: AbortSignal | undefined;
  /**
   * The request changes nothing when repeated (GET, HEAD, a tus PATCH checked by its offset): it is
   * sent again after any network error. Others only after errors that show it never left.
   */
  idempotent: boolean;
  /** Its body can be sent again (default true); a one-shot stream cannot. */
  replayable?: boolean;
  /** Sends one attempt, instead of the transport's fetch (a body with progress, see bodies.ts). */
  perform?: (url: URL, init: RequestInit) => Promise<Response>;
}

/** Errors that mean the connection was never made, so the service cannot have acted on the request. */
const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

function errorCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current && depth < 4; current = (current as { cause?: unknown }).cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

export const neverSent = (error: unknown) => NEVER_SENT.has(errorCode(error) ?? '');

/**
 * The signal for one request: a signal of its own that follows the caller's. A call of many
 * requests (a resumable upload's PATCHes, a CLI's files) would otherwise pile fetch's listeners
 * on one signal; AbortSignal.any ties them without adding any.
 */
export function requestSignal(signal: AbortSignal | undefined): AbortSignal | undefined {
  return signal && typeof AbortSignal.any === 'function' ? AbortSignal.any([signal]) : signal;
}

/** Waits, unless the signal aborts first (then throws its reason). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const done = () => {
      signal?.removeEventListener('abort', stop);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', stop, { once: true });
  });
}

/** Retry-After in milliseconds: seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(response: Response): number | undefined {
  const value = response.headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** The wait before attempt `attempt + 1`: doubling, with jitter so that many clients spread out. */
export const backoff = (retry: Required<RetryOptions>, attempt: number) =>
  Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** attempt * (0.75 + Math.random() / 2));

export function unreachable(url: URL | string, error: unknown): FileStoreError {
  const detail = errorCode(error) ?? (error instanceof Error ? error.message : String(error));
  return new FileStoreError(`The service at ${new URL(url).origin} cannot be reached (${detail}).`, { code: -1, cause: error });
}

/** Statuses after which the same request may be sent again: the service did not act on it. */
const RETRYABLE_STATUS = new Set([429, 503]);

/**
 * Sends a request, again after network errors and 429/503 answers (after Retry-After when the
 * service gives one) as long as that is safe and the attempts last; aborts with the signal.
 */
export async function send(transport: Transport, url: URL, init: () => RequestInit | Promise<RequestInit>, options: SendOptions): Promise<Response> {
  const { retry } = transport;
  const replayable = options.replayable ?? true;
  for (let attempt = 0; ; attempt++) {
    options.signal?.throwIfAborted();
    let response: Response;
    try {
      const signal = requestSignal(options.signal);
      response = await (options.perform ?? transport.fetch)(url, { ...(await init()), ...(signal ? { signal } : {}) });
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      const again = replayable && attempt < retry.retries && (options.idempotent || neverSent(error));
      if (!again) throw unreachable(url, error);
      await sleep(backoff(retry, attempt), options.signal);
      continue;
    }
    if (RETRYABLE_STATUS.has(response.status) && replayable && attempt < retry.retries) {
      const wait = retryAfterMs(response) ?? backoff(retry, attempt);
      if (wait <= retry.maxDelayMs) {
        await response.body?.cancel().catch(() => {});
        await sleep(wait, options.signal);
        continue;
      }
    }
    return response;
  }
}

interface EnvelopeBody {
  Code?: unknown;
  Message?: unknown;
  Items?: unknown;
}

/** The error an answer that is not a success stands for. */
export function errorOf(response: Response, body: EnvelopeBody | undefined): FileStoreError {
  const retryAfter = retryAfterMs(response);
  const details = { status: response.status, ...(retryAfter === undefined ? {} : { retryAfter: Math.ceil(retryAfter / 1000) }) };
  if (!body || typeof body.Message !== 'string') {
    return new FileStoreError(`The service answered ${response.status} ${response.statusText}`.trim() + ' without its JSON envelope.', { code: -1, ...details });
  }
  const items = Array.isArray(body.Items) ? body.Items.map(String) : [];
  return new FileStoreError(body.Message, { code: typeof body.Code === 'number' ? body.Code : -1, items, ...details });
}

/** Reads an answer's JSON envelope, if it has one. */
export async function readEnvelope(response: Response): Promise<EnvelopeBody | undefined> {
  const text = await response.text();
  try {
    const body = JSON.parse(text) as unknown;
    return body && typeof body === 'object' ? (body as EnvelopeBody) : undefined;
  } catch {
    return undefined;
  }
}

/** The success envelope of an answer (Code 0 with HTTP 200), else its error. */
export async function envelope<T>(response: Response): Promise<T> {
  const body = await readEnvelope(response);
  if (response.status === 200 && body?.Code === 0) return body as T;
  throw errorOf(response, body);
}
