import { useEffect, useState } from 'preact/hooks';
import type { StoredFile } from '@filestore/client';
import { Dialog } from './Dialog';
import { previewKind } from './preview-kind';
import { hasThumbnail, screenSizedUrl } from './thumbnails';

/** Text previews show the start of the file only. */
const TEXT_PREVIEW_BYTES = 64 * 1024;

/** Loaded when first used: the file list does not pay for it. */
export function Preview({ file, url, onClose }: { file: StoredFile; url: string; onClose: () => void }) {
  const kind = previewKind(file.FileExtension);
  return (
    <Dialog title={file.RealFileName} onClose={onClose}>
      <div class="preview">
        {kind === 'image' && <img src={hasThumbnail(file.FileExtension) ? screenSizedUrl(url) : url} alt={file.RealFileName} />}
        {kind === 'audio' && <audio src={url} controls preload="metadata" />}
        {kind === 'video' && <video src={url} controls preload="metadata" />}
        {kind === 'text' && <TextPreview url={url} size={file.JFileSize} />}
        {kind === 'pdf' && <p>The browser's PDF viewer shows it in a tab of its own.</p>}
      </div>
      <div class="actions">
        <a class="button" href={url} target="_blank" rel="noopener">
          Open in a new tab
        </a>
        <button type="button" class="quiet" onClick={onClose}>
          Close
        </button>
      </div>
    </Dialog>
  );
}

function TextPreview({ url, size }: { url: string; size: number }) {
  const [text, setText] = useState<string>();
  useEffect(() => {
    const abort = new AbortController();
    fetch(url, { headers: { Range: `bytes=0-${TEXT_PREVIEW_BYTES - 1}` }, signal: abort.signal })
      .then((response) => (response.ok ? response.text() : Promise.reject(new Error(`The file could not be read (${response.status}).`))))
      .then(setText, (error: Error) => abort.signal.aborted || setText(error.message));
    return () => abort.abort();
  }, [url]);
  if (text === undefined) return <p class="hint">Loading…</p>;
  return (
    <>
      <pre tabIndex={0}>{text}</pre>
      {size > TEXT_PREVIEW_BYTES && <p class="hint">The first 64 KiB are shown.</p>}
    </>
  );
}
