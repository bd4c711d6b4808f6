import { FileStoreError } from './errors.js';
import { OPERATIONS } from './operations.js';
import { envelope, send, type Transport } from './transport.js';
import type { TokenGrant } from './types.js';

/** An AccessToken and when, by this machine's clock, it stops working. */
interface Held {
  token: string;
  expiresAt: number;
  renewAt: number;
}

/** A token is renewed when this share of its lifetime is left (at most a minute before its end). */
const RENEW_SHARE = 0.25;
const MAX_RENEW_MARGIN_MS = 60_000;

function held(grant: Pick<TokenGrant, 'AccessToken' | 'DeadTime'>, serverDate: number | undefined, receivedAt: number): Held {
  const deadTime = Date.parse(grant.DeadTime);
  // The service's clock may differ from this one: the lifetime is measured on its own clock, from
  // its Date header (whole seconds, so the latest it may have meant), and counted from receipt.
  const lifetime = serverDate === undefined ? deadTime - receivedAt : deadTime - (serverDate + 999);
  const expiresAt = receivedAt + Math.max(0, lifetime);
  return { token: grant.AccessToken, expiresAt, renewAt: expiresAt - Math.min(MAX_RENEW_MARGIN_MS, Math.max(0, lifetime) * RENEW_SHARE) };
}

export interface TokenOptions {
  appId?: string | undefined;
  appSecret?: string | undefined;
  /** A token to use as it is (it is not renewed without appId and appSecret). */
  accessToken?: string | undefined;
  /** A grant kept from earlier (AccessToken and DeadTime), used until it is due for renewal. */
  token?: Pick<TokenGrant, 'AccessToken' | 'DeadTime'> | undefined;
  /** Called with each new grant, e.g. to keep it for the next run. */
  onToken?: ((grant: TokenGrant) => void) | undefined;
}

/** The AccessToken of a client: got with the app's credentials, renewed before its DeadTime, shared by concurrent calls. */
export class Tokens {
  #held: Held | undefined;
  #renewing: Promise<TokenGrant> | undefined;

  constructor(
    private readonly transport: Transport,
    private readonly options: TokenOptions,
  ) {
    if (options.token) this.#held = held(options.token, undefined, Date.now());
    else if (options.accessToken) this.#held = { token: options.accessToken, expiresAt: Infinity, renewAt: Infinity };
  }

  get canRenew(): boolean {
    return this.options.appId !== undefined && this.options.appSecret !== undefined;
  }

  /** A token that is not due for renewal. */
  async get(signal?: AbortSignal): Promise<string> {
    const current = this.#held;
    if (current && (Date.now() < current.renewAt || !this.canRenew)) return current.token;
    if (!this.canRenew) throw new FileStoreError('No AccessToken: give accessToken, or appId and appSecret.', { code: -1 });
    return (await this.renew(signal)).AccessToken;
  }

  /** The service refused `token`: the next call gets a new one. */
  refused(token: string): void {
    if (this.#held?.token === token) this.#held = undefined;
  }

  /** Asks the service for a new token; concurrent callers share one request. */
  renew(signal?: AbortSignal): Promise<TokenGrant> {
    this.#renewing ??= this.#request(signal).finally(() => (this.#renewing = undefined));
    return this.#renewing;
  }

  async #request(signal?: AbortSignal): Promise<TokenGrant> {
    const { method, path } = OPERATIONS.AccessToken;
    const body = JSON.stringify({ AppId: this.options.appId, AppSecret: this.options.appSecret });
    const url = new URL(path, this.transport.baseUrl);
    const response = await send(this.transport, url, () => ({ method, body, headers: { 'content-type': 'application/json' } }), { signal, idempotent: true });
    const receivedAt = Date.now();
    const date = Date.parse(response.headers.get('date') ?? '');
    const grant = await envelope<TokenGrant>(response);
    this.#held = held(grant, Number.isNaN(date) ? undefined : date, receivedAt);
    this.options.onToken?.(grant);
    return grant;
  }
}
