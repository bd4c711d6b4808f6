import { useMemo, useState } from 'preact/hooks';
import type { FileStore, StoredFile } from '@filestore/client';
import { Confirm, Dialog } from './Dialog';
import { expiryOf, humanSize, humanTime } from './format';
import { failure, type Notify } from './notices';
import { previewKind } from './preview-kind';
import { Thumbnail } from './Thumbnail';
import { hasThumbnail } from './thumbnails';

type SortKey = 'name' | 'size' | 'uploaded' | 'expires' | 'downloads';

const COLUMNS: { key: SortKey; label: string; number?: boolean }[] = [
  { key: 'name', label: 'Name' },
  { key: 'size', label: 'Size', number: true },
  { key: 'uploaded', label: 'Uploaded' },
  { key: 'expires', label: 'Expires' },
  { key: 'downloads', label: 'Downloads', number: true },
];

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

/** A listed file with what sorting needs computed once, so sorting 10,000 rows stays quick. */
interface Row {
  file: StoredFile;
  lowerName: string;
  uploaded: number;
  expires: number;
}

const compare: Record<SortKey, (a: Row, b: Row) => number> = {
  name: (a, b) => collator.compare(a.file.RealFileName, b.file.RealFileName),
  size: (a, b) => a.file.JFileSize - b.file.JFileSize,
  uploaded: (a, b) => a.uploaded - b.uploaded,
  expires: (a, b) => a.expires - b.expires,
  downloads: (a, b) => a.file.DownloadTimes - b.file.DownloadTimes,
};

/** Rows shown at once: a page of a long list renders at once, and the rest is a page turn away. */
const PAGE_SIZE = 100;

interface Props {
  api: FileStore;
  files: StoredFile[];
  openToRead: boolean;
  notify: Notify;
  onChanged: () => void;
}

export function FileTable({ api, files, openToRead, notify, onChanged }: Props) {
  const [filter, setFilter] = useState('');
  const [sort, setSort] = useState<{ key: SortKey; descending: boolean }>({ key: 'uploaded', descending: true });
  const [page, setPage] = useState(0);
  const [deleting, setDeleting] = useState<StoredFile>();
  const [sharing, setSharing] = useState<StoredFile>();
  const [preview, setPreview] = useState<{ file: StoredFile; url: string; view: (props: { file: StoredFile; url: string; onClose: () => void }) => preact.JSX.Element }>();

  const rows = useMemo(
    () => files.map((file) => ({ file, lowerName: file.RealFileName.toLowerCase(), uploaded: Date.parse(file.UploadTime), expires: expiryOf(file.UploadTime, file.AliveDays) })),
    [files],
  );
  const shown = useMemo(() => {
    const needle = filter.trim().toLowerCase();
    const kept = needle ? rows.filter((row) => row.lowerName.includes(needle)) : rows.slice();
    const order = compare[sort.key];
    return kept.sort(sort.descending ? (a, b) => order(b, a) : order);
  }, [rows, filter, sort]);
  const pages = Math.max(1, Math.ceil(shown.length / PAGE_SIZE));
  const current = Math.min(page, pages - 1);
  const visible = shown.slice(current * PAGE_SIZE, (current + 1) * PAGE_SIZE);

  const sortBy = (key: SortKey) => {
    setSort((was) => ({ key, descending: was.key === key ? !was.descending : key !== 'name' }));
    setPage(0);
  };

  /** A bucket that is not open to read serves its files only through a download secret. */
  const downloadUrl = async (file: StoredFile, uses: number) => (openToRead ? file.InternetPath : api.secretUrl((await api.generateSecret(file.FileKey, { maxUseTimes: uses })).Value));

  /** Where a thumbnail comes from: the InternetPath, or a secret of one use in a private bucket (asked for once the row is seen). */
  const thumbnailSource = (file: StoredFile) => () => downloadUrl(file, 1);

  const open = async (event: MouseEvent, file: StoredFile) => {
    if (openToRead) return;
    event.preventDefault();
    // Opened before the secret is made, while the click still allows a new tab.
    const tab = window.open('about:blank', '_blank');
    try {
      const url = await downloadUrl(file, 1);
      if (tab) {
        tab.opener = null;
        tab.location.href = url;
      }
    } catch (error) {
      tab?.close();
      notify(failure(error));
    }
  };

  const showPreview = async (file: StoredFile) => {
    try {
      // Media players ask for several ranges of one file: a private file's secret allows for them.
      const [url, { Preview }] = await Promise.all([downloadUrl(file, 20), import('./Preview')]);
      setPreview({ file, url, view: Preview });
    } catch (error) {
      notify(failure(error));
    }
  };

  const copyLink = async (file: StoredFile) => {
    try {
      await navigator.clipboard.writeText(file.InternetPath);
      notify({ kind: 'success', text: `Copied the link of ${file.RealFileName}.` });
    } catch {
      notify({ kind: 'error', text: `The browser did not allow copying. The link is ${file.InternetPath}` });
    }
  };

  const remove = async (file: StoredFile) => {
    setDeleting(undefined);
    try {
      const answer = await api.deleteFile(file.FileKey);
      notify({ kind: 'success', text: answer.Message });
      onChanged();
    } catch (error) {
      notify(failure(error));
    }
  };

  return (
    <div class="files">
      <div class="toolbar">
        <label for="file-filter">Filter by name</label>
        <input id="file-filter" type="search" value={filter} onInput={(event) => (setFilter(event.currentTarget.value), setPage(0))} />
        <span class="count" aria-live="polite">
          {shown.length === files.length ? `${files.length} file(s)` : `${shown.length} of ${files.length} file(s)`}
        </span>
      </div>
      {files.length === 0 ? (
        <p class="empty">No files yet. Choose files or drop them above.</p>
      ) : (
        <table class="list sortable">
          <thead>
            <tr>
              {COLUMNS.map((column) => (
                <th
                  scope="col"
                  class={column.number ? 'number' : undefined}
                  aria-sort={sort.key === column.key ? (sort.descending ? 'descending' : 'ascending') : undefined}
                >
                  <button type="button" class="sort" onClick={() => sortBy(column.key)}>
                    {column.label}
                    <span aria-hidden="true">{sort.key === column.key ? (sort.descending ? ' ▼' : ' ▲') : ''}</span>
                  </button>
                </th>
              ))}
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {visible.map(({ file, uploaded, expires }) => (
              <tr key={file.FileKey}>
                <td class="name">
                  <span class="named">
                    {hasThumbnail(file.FileExtension) && <Thumbnail key={file.FileKey} source={thumbnailSource(file)} />}
                    <a href={file.InternetPath} target="_blank" rel="noopener" onClick={(event) => void open(event, file)}>
                      {file.RealFileName}
                    </a>
                  </span>
                </td>
                <td class="number" data-label="Size">
                  {humanSize(file.JFileSize)}
                </td>
                <td class="time" data-label="Uploaded">{humanTime(uploaded)}</td>
                <td class="time" data-label="Expires">{humanTime(expires)}</td>
                <td class="number" data-label="Downloads">
                  {file.DownloadTimes}
                </td>
                <td class="row-actions">
                  {previewKind(file.FileExtension) && (
                    <button type="button" class="quiet" onClick={() => void showPreview(file)}>
                      Preview
                    </button>
                  )}
                  <button type="button" class="quiet" onClick={() => void copyLink(file)}>
                    Copy link
                  </button>
                  <button type="button" class="quiet" onClick={() => setSharing(file)}>
                    Share
                  </button>
                  <button type="button" class="quiet danger" onClick={() => setDeleting(file)}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {pages > 1 && (
        <nav class="pager" aria-label="Pages">
          <button type="button" class="quiet" disabled={current === 0} onClick={() => setPage(current - 1)}>
            Previous page
          </button>
          <span>
            Page {current + 1} of {pages}
          </span>
          <button type="button" class="quiet" disabled={current === pages - 1} onClick={() => setPage(current + 1)}>
            Next page
          </button>
        </nav>
      )}
      {deleting && (
        <Confirm
          title={`Delete ${deleting.RealFileName}?`}
          text="The file is deleted for good; its links stop working at once."
          action="Delete file"
          onConfirm={() => void remove(deleting)}
          onClose={() => setDeleting(undefined)}
        />
      )}
      {sharing && <ShareDialog api={api} file={sharing} onClose={() => setSharing(undefined)} />}
      {preview && <preview.view file={preview.file} url={preview.url} onClose={() => setPreview(undefined)} />}
    </div>
  );
}

/** A share link: a download secret good for a number of downloads, whatever the bucket's flags. */
function ShareDialog({ api, file, onClose }: { api: FileStore; file: StoredFile; onClose: () => void }) {
  const [link, setLink] = useState<string>();
  const [error, setError] = useState<string>();
  const [copied, setCopied] = useState(false);

  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const uses = Number(new FormData(event.currentTarget as HTMLFormElement).get('uses'));
    setError(undefined);
    try {
      setLink(api.secretUrl((await api.generateSecret(file.FileKey, { maxUseTimes: uses })).Value));
      setCopied(false);
    } catch (failed) {
      setError(failure(failed).text);
    }
  };

  return (
    <Dialog title={`Share ${file.RealFileName}`} onClose={onClose}>
      <form onSubmit={submit}>
        <label for="share-uses">Number of downloads</label>
        <input id="share-uses" name="uses" type="number" min={1} max={1000000} defaultValue="1" required />
        <div class="actions">
          <button type="submit">Make share link</button>
          <button type="button" class="quiet" onClick={onClose}>
            Close
          </button>
        </div>
      </form>
      {error && (
        <p class="notice error" role="alert">
          {error}
        </p>
      )}
      {link && (
        <div class="share">
          <label for="share-link">Share link</label>
          <div class="inline">
            <input id="share-link" type="text" readOnly value={link} onFocus={(event) => event.currentTarget.select()} />
            <button type="button" onClick={() => navigator.clipboard.writeText(link).then(() => setCopied(true), () => setError('The browser did not allow copying; select the link and copy it.'))}>
              Copy
            </button>
          </div>
          {copied && <p role="status">Copied.</p>}
        </div>
      )}
    </Dialog>
  );
}
