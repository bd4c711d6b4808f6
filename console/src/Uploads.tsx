import type { FileStore } from '@filestore/client';
import { useRef, useState } from 'preact/hooks';
import { failure } from './notices';

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
}

/** What an upload in progress needs besides what is shown: its file, how to stop it, and where to resume it. */
interface Running {
  file: File;
  aliveDays: number;
  controller: AbortController;
  /** The upload's URL once created: its capability, kept in this page only. */
  url?: string;
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
  api: FileStore;
  bucketId: number;
  onUploaded: () => void;
}

/**
 * Resumable uploads (tus, through the SDK) of chosen or dropped files, each with its progress and
 * its controls. The SDK retries a lost connection or a busy service itself; a refusal (no
 * permission, too large, name taken) waits for the person.
 */
export function Uploads({ api, bucketId, onUploaded }: Props) {
  const [items, setItems] = useState<Item[]>([]);
  const [aliveDays, setAliveDays] = useState(DEFAULT_ALIVE_DAYS);
  const [dragging, setDragging] = useState(false);
  const nextId = useRef(1);
  const running = useRef(new Map<number, Running>());

  const update = (id: number, change: Partial<Item>) => setItems((all) => all.map((item) => (item.id === id ? { ...item, ...change } : item)));

  const run = (id: number) => {
    const upload = running.current.get(id);
    if (!upload) return;
    const controller = new AbortController();
    upload.controller = controller;
    api
      .uploadFile(bucketId, upload.file, {
        aliveDays: upload.aliveDays,
        resumable: true,
        resumeFrom: upload.url,
        signal: controller.signal,
        onUploadUrl: (url) => (upload.url = url),
        onProgress: ({ sent }) => update(id, { sent }),
      })
      .then(
        () => {
          running.current.delete(id);
          update(id, { sent: upload.file.size, state: 'done' });
          onUploaded();
        },
        (error: unknown) => {
          if (!controller.signal.aborted) update(id, { state: 'failed', error: failure(error).text });
        },
      );
  };

  const start = (files: FileList | File[]) => {
    const added = Array.from(files).map((file): Item => {
      const id = nextId.current++;
      running.current.set(id, { file, aliveDays, controller: new AbortController() });
      return { id, name: file.name, size: file.size, sent: 0, state: 'uploading' };
    });
    setItems((all) => [...added, ...all]);
    for (const item of added) run(item.id);
  };

  const pause = (item: Item) => {
    running.current.get(item.id)?.controller.abort();
    update(item.id, { state: 'paused' });
  };
  const resume = (item: Item) => {
    update(item.id, { state: 'uploading', error: undefined });
    run(item.id);
  };
  const cancel = (item: Item) => {
    const upload = running.current.get(item.id);
    running.current.delete(item.id);
    upload?.controller.abort();
    // Terminates the upload on the service too, so its bytes do not wait for expiry.
    if (upload?.url && item.state !== 'done') void api.terminateUpload(upload.url).catch(() => undefined);
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
