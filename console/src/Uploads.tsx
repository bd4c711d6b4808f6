import { useRef, useState } from 'preact/hooks';
import { DetailedError, Upload } from 'tus-js-client';

/** One PATCH per chunk: an interrupted upload loses at most this much and resumes at the last chunk. */
const CHUNK_BYTES = 8 * 1024 * 1024;
const DEFAULT_ALIVE_DAYS = 30;
const MAX_ALIVE_DAYS = 18250;

type State = 'uploading' | 'paused' | 'failed' | 'done';

interface Item {
  id: number;
  name: string;
  size: number;
  sent: number;
  state: State;
  error?: string;
  upload: Upload;
}

/** The envelope's Message of a refused tus request, else what went wrong in plain words. */
function uploadError(error: Error): string {
  if (error instanceof DetailedError) {
    const response = error.originalResponse;
    if (!response) return 'The service cannot be reached. Check the connection, then retry.';
    try {
      const body = JSON.parse(response.getBody()) as { Message?: unknown };
      if (typeof body.Message === 'string') return body.Message;
    } catch {
      // Not the envelope: the status says enough.
    }
    return `The service answered ${response.getStatus()}.`;
  }
  return error.message;
}

/**
 * Retried on their own: a lost connection, a busy or failing service, and an offset that moved
 * under a PATCH. A refusal (no permission, too large, name taken at creation) waits for the person.
 */
function retryable(error: DetailedError): boolean {
  const status = error.originalResponse?.getStatus() ?? 0;
  if (status === 0 || status >= 500 || status === 423 || status === 429) return true;
  return status === 409 && error.originalRequest?.getMethod() === 'PATCH';
}

function describe(item: Item): string | undefined {
  if (item.state === 'done') return 'Uploaded';
  if (item.state === 'failed') return item.error;
  const percent = `${item.size ? Math.floor((item.sent / item.size) * 100) : 0}%`;
  if (item.state === 'paused') return `Paused at ${percent}`;
  // Every byte is there: the service is making the file durable and listing it.
  return item.sent === item.size ? 'Finishing…' : percent;
}

interface Props {
  token: () => Promise<string>;
  bucketId: number;
  onUploaded: () => void;
}

/** Resumable uploads (tus) of chosen or dropped files, each with its progress and its controls. */
export function Uploads({ token, bucketId, onUploaded }: Props) {
  const [items, setItems] = useState<Item[]>([]);
  const [aliveDays, setAliveDays] = useState(DEFAULT_ALIVE_DAYS);
  const [dragging, setDragging] = useState(false);
  const nextId = useRef(1);

  const update = (id: number, change: Partial<Item>) => setItems((all) => all.map((item) => (item.id === id ? { ...item, ...change } : item)));

  const start = (files: FileList | File[]) => {
    const added = Array.from(files).map((file): Item => {
      const id = nextId.current++;
      const upload = new Upload(file, {
        endpoint: `${location.origin}/API/ResumableUpload`,
        chunkSize: CHUNK_BYTES,
        retryDelays: [0, 1000, 3000, 5000],
        metadata: { filename: file.name, BucketId: String(bucketId), AliveDays: String(aliveDays) },
        // The upload URL is the capability of later requests: only creation needs the token, and
        // upload URLs are kept nowhere but in this page.
        storeFingerprintForResuming: false,
        onBeforeRequest: async (request) => {
          if (request.getMethod() === 'POST') request.setHeader('Authorization', `Bearer ${await token()}`);
        },
        onShouldRetry: retryable,
        onProgress: (sent) => update(id, { sent }),
        onSuccess: () => {
          update(id, { sent: file.size, state: 'done' });
          onUploaded();
        },
        onError: (error) => update(id, { state: 'failed', error: uploadError(error) }),
      });
      upload.start();
      return { id, name: file.name, size: file.size, sent: 0, state: 'uploading', upload };
    });
    setItems((all) => [...added, ...all]);
  };

  const pause = (item: Item) => {
    void item.upload.abort();
    update(item.id, { state: 'paused' });
  };
  const resume = (item: Item) => {
    update(item.id, { state: 'uploading', error: undefined });
    item.upload.start();
  };
  const cancel = (item: Item) => {
    // Terminates the upload on the service too, so its bytes do not wait for expiry.
    if (item.state !== 'done') void item.upload.abort(true).catch(() => undefined);
    setItems((all) => all.filter((other) => other.id !== item.id));
  };

  const drop = (event: DragEvent) => {
    event.preventDefault();
    setDragging(false);
    if (event.dataTransfer?.files.length) start(event.dataTransfer.files);
  };

  return (
    <section class="uploads" aria-label="Uploads">
      <div
        class={dragging ? 'dropzone dragging' : 'dropzone'}
        onDragOver={(event) => (event.preventDefault(), setDragging(true))}
        onDragLeave={() => setDragging(false)}
        onDrop={drop}
      >
        <div class="field">
          <label for="choose-files">Choose files</label>
          <input
            id="choose-files"
            type="file"
            multiple
            onChange={(event) => {
              const input = event.currentTarget;
              if (input.files?.length) start(input.files);
              input.value = '';
            }}
          />
        </div>
        <div class="field">
          <label for="alive-days">Keep for (days)</label>
          <input
            id="alive-days"
            type="number"
            min={1}
            max={MAX_ALIVE_DAYS}
            value={aliveDays}
            onInput={(event) => setAliveDays(Math.min(MAX_ALIVE_DAYS, Math.max(1, Math.trunc(Number(event.currentTarget.value)) || 1)))}
          />
        </div>
        <p class="hint">…or drop files here. Uploads resume where they stopped after a pause or a broken connection.</p>
      </div>
      {items.length > 0 && (
        <ul class="upload-list">
          {items.map((item) => (
            <li key={item.id} class={`upload ${item.state}`}>
              <span class="upload-name">{item.name}</span>
              <progress max={item.size || 1} value={item.size ? item.sent : item.state === 'done' ? 1 : 0} aria-label={`Upload of ${item.name}`} />
              <span class="upload-state">{describe(item)}</span>
              <span class="upload-actions">
                {item.state === 'uploading' && item.sent < item.size && (
                  <button type="button" class="quiet" aria-label={`Pause ${item.name}`} onClick={() => pause(item)}>
                    Pause
                  </button>
                )}
                {item.state === 'paused' && (
                  <button type="button" class="quiet" aria-label={`Resume ${item.name}`} onClick={() => resume(item)}>
                    Resume
                  </button>
                )}
                {item.state === 'failed' && (
                  <button type="button" class="quiet" aria-label={`Retry ${item.name}`} onClick={() => resume(item)}>
                    Retry
                  </button>
                )}
                <button type="button" class="quiet" aria-label={`${item.state === 'done' ? 'Dismiss' : 'Cancel'} ${item.name}`} onClick={() => cancel(item)}>
                  {item.state === 'done' ? 'Dismiss' : 'Cancel'}
                </button>
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
