export const INVALID_TOKEN_MESSAGE = 'Invalid or expired AccessToken.';

/** The only Message a validation failure carries; the details go in Items. */
export const VALIDATION_MESSAGE = 'Your input contains several errors!';

/**
 * A refusal the client should see: Code -1 (general failure) or -10 (validation failure).
 * Protocol outcomes travel with HTTP 200, as the original clients expect; transport-level ones
 * (413, 415, 429, 503, 507…) carry their own status.
 */
export class ApiError extends Error {
  constructor(
    readonly code: -1 | -10,
    message: string,
    readonly statusCode = 200,
    readonly items?: readonly string[],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export function failure(message: string, statusCode = 200): ApiError {
  return new ApiError(-1, message, statusCode);
}

export function invalidInput(items: readonly string[], statusCode = 200): ApiError {
  return new ApiError(-10, VALIDATION_MESSAGE, statusCode, items);
}

export interface Envelope {
  Code: number;
  Message: string;
  Items?: readonly string[];
  [field: string]: unknown;
}
