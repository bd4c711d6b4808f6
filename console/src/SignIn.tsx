import { useState } from 'preact/hooks';
import { failure, type Notify } from './notices';
import { signIn, type Session } from './session';

export function SignIn({ onSignedIn, notify }: { onSignedIn: (session: Session) => void; notify: Notify }) {
  const [busy, setBusy] = useState(false);

  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget as HTMLFormElement);
    setBusy(true);
    notify(undefined);
    try {
      onSignedIn(await signIn(String(data.get('appId')).trim(), String(data.get('appSecret'))));
    } catch (error) {
      notify(failure(error));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="card narrow">
      <h1>Sign in</h1>
      <p class="hint">Use your app's AppId and AppSecret. They stay in this browser tab only and are forgotten when you sign out or close it.</p>
      <form onSubmit={submit}>
        <label for="app-id">AppId</label>
        <input id="app-id" name="appId" type="text" autocomplete="username" required spellcheck={false} />
        <label for="app-secret">AppSecret</label>
        <input id="app-secret" name="appSecret" type="text" class="secret" autocomplete="off" required spellcheck={false} />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
    </section>
  );
}
