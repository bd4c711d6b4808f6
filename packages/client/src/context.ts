import type { BodySender } from './bodies.js';
import type { PathOpener } from './sources.js';
import type { Tokens } from './tokens.js';
import type { Transport } from './transport.js';

/** What the parts of a client work with. */
export interface ClientContext {
  readonly transport: Transport;
  readonly tokens: Tokens;
  readonly bodies: BodySender;
  readonly openPath: PathOpener | undefined;
  /** Files of at least this many bytes (of a known size) are uploaded resumably. */
  readonly resumableThreshold: number;
  /** Bytes per PATCH of a resumable upload. */
  readonly chunkSize: number;
}

export interface CallOptions {
  /** Aborts the call: the promise rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}
