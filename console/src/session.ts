import { FileStore } from '@filestore/client';

/**
 * The signed-in app. Kept in sessionStorage only (gone when the tab closes): the AccessToken and the
 * credentials that renew it before its DeadTime, since a token lives only minutes.
 */
export interface Session {
  appId: string;
  appSecret: string;
  token: string;
  /** The token's DeadTime (ISO 8601). */
  deadTime: string;
}

const KEY = 'filestore.session';
/** Bytes per request of a resumable upload: a broken connection or a pause loses at most this much. */
const CHUNK_BYTES = 8 * 1024 * 1024;

export function loadSession(): Session | undefined {
  try {
    const stored = JSON.parse(sessionStorage.getItem(KEY) ?? 'null') as (Omit<Session, 'deadTime'> & { deadTime: string | number }) | null;
    if (!stored || typeof stored.token !== 'string') return undefined;
    return { ...stored, deadTime: new Date(stored.deadTime).toISOString() };
  } catch {
    return undefined;
  }
}

export function forgetSession(): void {
  sessionStorage.removeItem(KEY);
}

const keep = (session: Session) => sessionStorage.setItem(KEY, JSON.stringify(session));

export async function signIn(appId: string, appSecret: string): Promise<Session> {
  const grant = await new FileStore({ url: location.origin, appId, appSecret }).accessToken();
  const session = { appId, appSecret, token: grant.AccessToken, deadTime: grant.DeadTime };
  keep(session);
  return session;
}

/** The API for a session: the SDK renews the token before its DeadTime, and each new one is kept in the session. */
export function clientFor(session: Session, renewed: (session: Session) => void): FileStore {
  return new FileStore({
    url: location.origin,
    appId: session.appId,
    appSecret: session.appSecret,
    token: { AccessToken: session.token, DeadTime: session.deadTime },
    chunkSize: CHUNK_BYTES,
    onToken: (grant) => {
      const next = { ...session, token: grant.AccessToken, deadTime: grant.DeadTime };
      keep(next);
      renewed(next);
    },
  });
}
