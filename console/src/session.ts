import { ApiError, EXPIRED_TOKEN_MESSAGE, requestToken } from './api';

/**
 * The signed-in app. Kept in sessionStorage only (gone when the tab closes): the AccessToken and the
 * credentials that renew it before its DeadTime, since a token lives only minutes.
 */
export interface Session {
  appId: string;
  appSecret: string;
  token: string;
  deadTime: number;
}

const KEY = 'filestore.session';
/** Renew this long before DeadTime, so a request never leaves with a token about to die. */
const RENEW_MARGIN_MS = 60_000;

export function loadSession(): Session | undefined {
  try {
    const stored = JSON.parse(sessionStorage.getItem(KEY) ?? 'null') as Session | null;
    return stored && typeof stored.token === 'string' ? stored : undefined;
  } catch {
    return undefined;
  }
}

export function forgetSession(): void {
  sessionStorage.removeItem(KEY);
}

export async function signIn(appId: string, appSecret: string): Promise<Session> {
  const grant = await requestToken(appId, appSecret);
  const session = { appId, appSecret, token: grant.AccessToken, deadTime: Date.parse(grant.DeadTime) };
  sessionStorage.setItem(KEY, JSON.stringify(session));
  return session;
}

/** A token getter that renews the session's token when it is close to its DeadTime. */
export function freshToken(current: () => Session | undefined, replace: (session: Session) => void): () => Promise<string> {
  let renewing: Promise<Session> | undefined;
  return async () => {
    const session = current();
    if (!session) throw new ApiError('You are signed out.', -1);
    if (session.deadTime - Date.now() > RENEW_MARGIN_MS) return session.token;
    renewing ??= signIn(session.appId, session.appSecret).finally(() => (renewing = undefined));
    const renewed = await renewing;
    replace(renewed);
    return renewed.token;
  };
}

export const isExpiredToken = (error: unknown) => error instanceof ApiError && error.message === EXPIRED_TOKEN_MESSAGE;
