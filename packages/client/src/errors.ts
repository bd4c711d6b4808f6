/** The Message of every validation failure, the service's and the SDK's own. */
export const VALIDATION_MESSAGE = 'Your input contains several errors!';

export interface FileStoreErrorDetails {
  /** The envelope's Code: -1 a refusal or failure, -10 invalid input. */
  code: number;
  /** One text per invalid input (Code -10). */
  items?: readonly string[];
  /** The HTTP status of the answer; 0 when no answer came (bad arguments, network). */
  status?: number;
  /** Seconds the service asked to wait (`Retry-After`), when it did. */
  retryAfter?: number;
  cause?: unknown;
}

/**
 * A refusal or failure: the service's envelope (Code, Message, Items) and the HTTP status, or the
 * same shape for what the SDK refused itself (bad arguments: -10 with Items, as the service
 * words them) and for a service that could not be reached (-1, status 0).
 */
export class FileStoreError extends Error {
  readonly code: number;
  readonly items: readonly string[];
  readonly status: number;
  readonly retryAfter: number | undefined;

  constructor(message: string, details: FileStoreErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'FileStoreError';
    this.code = details.code;
    this.items = details.items ?? [];
    this.status = details.status ?? 0;
    this.retryAfter = details.retryAfter;
  }

  /** What a person reads: the Message, then each invalid input. */
  get text(): string {
    return this.items.length > 0 ? `${this.message} ${this.items.join(' ')}` : this.message;
  }
}

export const invalidArguments = (items: readonly string[]) => new FileStoreError(VALIDATION_MESSAGE, { code: -10, items });

/** The service's texts for invalid inputs, so that a refusal reads the same wherever it was made. */
export const problems = {
  required: (name: string) => `The ${name} field is required.`,
  notValid: (raw: unknown, name: string) => `The value '${String(raw).slice(0, 40)}' is not valid for ${name}.`,
  outOfRange: (name: string, minimum: number, maximum: number) => `The field ${name} must be between ${minimum} and ${maximum}.`,
  tooLong: (name: string, maxLength: number) => `The field ${name} must be a string with a maximum length of ${maxLength}.`,
};

/** The Message of a refused token: the SDK gets a new one and asks again. */
export const EXPIRED_TOKEN_MESSAGE = 'Invalid or expired AccessToken.';
