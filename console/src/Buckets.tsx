import { useEffect, useState } from 'preact/hooks';
import type { Bucket, FileStore } from '@filestore/client';
import { Confirm, Dialog } from './Dialog';
import { failure, type Notify } from './notices';

type Editing = { kind: 'new' } | { kind: 'edit'; bucket: Bucket };

export function BucketList({ api, notify }: { api: FileStore; notify: Notify }) {
  const [buckets, setBuckets] = useState<Bucket[]>();
  const [editing, setEditing] = useState<Editing>();
  const [deleting, setDeleting] = useState<Bucket>();

  const load = () =>
    api.viewMyBuckets().then(
      (answer) => setBuckets(answer.Buckets),
      (error) => notify(failure(error)),
    );
  useEffect(() => void load(), [api]);

  const remove = async (bucket: Bucket) => {
    setDeleting(undefined);
    try {
      const answer = await api.deleteBucket(bucket.BucketId);
      notify({ kind: 'success', text: answer.Message });
      await load();
    } catch (error) {
      notify(failure(error));
    }
  };

  return (
    <section>
      <div class="heading">
        <h1>Buckets</h1>
        <button type="button" onClick={() => setEditing({ kind: 'new' })}>
          New bucket
        </button>
      </div>
      {buckets === undefined ? (
        <p class="hint">Loading…</p>
      ) : buckets.length === 0 ? (
        <p class="empty">No buckets yet. Create one to start uploading files.</p>
      ) : (
        <table class="list">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Open to read</th>
              <th scope="col">Open to upload</th>
              <th scope="col" class="number">
                Files
              </th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {buckets.map((bucket) => (
              <tr key={bucket.BucketId}>
                <td class="name">
                  <a href={`#/buckets/${bucket.BucketId}`}>{bucket.BucketName}</a>
                </td>
                <td data-label="Open to read">{bucket.OpenToRead ? 'Yes' : 'No'}</td>
                <td data-label="Open to upload">{bucket.OpenToUpload ? 'Yes' : 'No'}</td>
                <td class="number" data-label="Files">
                  {bucket.FileCount}
                </td>
                <td class="row-actions">
                  <button type="button" class="quiet" aria-label={`Edit ${bucket.BucketName}`} onClick={() => setEditing({ kind: 'edit', bucket })}>
                    Edit
                  </button>
                  <button type="button" class="quiet danger" aria-label={`Delete ${bucket.BucketName}`} onClick={() => setDeleting(bucket)}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {editing && (
        <BucketForm
          api={api}
          editing={editing}
          onClose={() => setEditing(undefined)}
          onSaved={(message) => {
            setEditing(undefined);
            notify({ kind: 'success', text: message });
            void load();
          }}
        />
      )}
      {deleting && (
        <Confirm
          title={`Delete ${deleting.BucketName}?`}
          text={`The bucket and its ${deleting.FileCount} file(s) are deleted for good; their links stop working at once.`}
          action="Delete bucket"
          onConfirm={() => void remove(deleting)}
          onClose={() => setDeleting(undefined)}
        />
      )}
    </section>
  );
}

function BucketForm({ api, editing, onClose, onSaved }: { api: FileStore; editing: Editing; onClose: () => void; onSaved: (message: string) => void }) {
  const current = editing.kind === 'edit' ? editing.bucket : undefined;
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget as HTMLFormElement);
    const name = String(data.get('name')).trim();
    const openToRead = data.get('openToRead') === 'on';
    const openToUpload = data.get('openToUpload') === 'on';
    setBusy(true);
    try {
      const answer = current
        ? await api.editBucket(current.BucketId, { newBucketName: name, openToRead, openToUpload })
        : await api.createBucket(name, { openToRead, openToUpload });
      onSaved(answer.Message);
    } catch (failed) {
      setError(failure(failed).text);
      setBusy(false);
    }
  };

  return (
    <Dialog title={current ? `Edit ${current.BucketName}` : 'New bucket'} onClose={onClose}>
      <form onSubmit={submit}>
        <label for="bucket-name">Bucket name</label>
        <input
          id="bucket-name"
          name="name"
          type="text"
          required
          minLength={5}
          maxLength={25}
          pattern="[A-Za-z0-9][A-Za-z0-9._\-]*"
          defaultValue={current?.BucketName}
          aria-describedby="bucket-name-hint"
          spellcheck={false}
          autofocus
        />
        <p id="bucket-name-hint" class="hint">
          5 to 25 letters, digits, dots, dashes or underscores; it is part of every file's link.
        </p>
        <label class="check">
          <input type="checkbox" name="openToRead" defaultChecked={current?.OpenToRead} /> Open to read
        </label>
        <label class="check">
          <input type="checkbox" name="openToUpload" defaultChecked={current?.OpenToUpload} /> Open to upload
        </label>
        {error && (
          <p class="notice error" role="alert">
            {error}
          </p>
        )}
        <div class="actions">
          <button type="submit" disabled={busy}>
            {current ? 'Save' : 'Create'}
          </button>
          <button type="button" class="quiet" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}
