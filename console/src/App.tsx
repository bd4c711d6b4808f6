import { useEffect, useMemo, useState } from 'preact/hooks';
import { BucketPage } from './BucketPage';
import { BucketList } from './Buckets';
import type { Notice } from './notices';
import { clientFor, forgetSession, loadSession, type Session } from './session';
import { SignIn } from './SignIn';

/** `#/buckets/12` → 12: the page is kept in the hash, so a reload stays where it was. */
function bucketInHash(): number | undefined {
  const match = /^#\/buckets\/(\d+)$/.exec(location.hash);
  return match ? Number(match[1]) : undefined;
}

export function App() {
  const [session, setSession] = useState<Session | undefined>(loadSession);
  const [bucketId, setBucketId] = useState(bucketInHash);
  const [notice, setNotice] = useState<Notice>();

  useEffect(() => {
    const follow = () => {
      setBucketId(bucketInHash());
      setNotice(undefined);
    };
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);

  // One client for the whole session: it renews its own token, which the session keeps.
  const api = useMemo(() => session && clientFor(session, setSession), [session?.appId]);

  const signOut = () => {
    forgetSession();
    setSession(undefined);
    setNotice(undefined);
    location.hash = '';
  };

  return (
    <>
      <header class="top">
        <a class="brand" href="#/">
          File storage
        </a>
        {session && (
          <>
            <span class="app-id" title="Signed in as this app">
              {session.appId}
            </span>
            <button type="button" class="quiet" onClick={signOut}>
              Sign out
            </button>
          </>
        )}
      </header>
      <main>
        <div class="notices" aria-live="polite">
          {notice && (
            <div class={`notice ${notice.kind}`}>
              <p role={notice.kind === 'error' ? 'alert' : 'status'}>{notice.text}</p>
              <button type="button" class="quiet" aria-label="Dismiss message" onClick={() => setNotice(undefined)}>
                ×
              </button>
            </div>
          )}
        </div>
        {!session || !api ? (
          <SignIn onSignedIn={(signedIn) => (setSession(signedIn), setNotice(undefined))} notify={setNotice} />
        ) : bucketId === undefined ? (
          <BucketList api={api} notify={setNotice} />
        ) : (
          <BucketPage api={api} bucketId={bucketId} notify={setNotice} />
        )}
      </main>
    </>
  );
}
