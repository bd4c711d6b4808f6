import { useEffect, useRef, useState } from 'preact/hooks';
import { THUMBNAIL_SIZE, thumbnailUrl } from './thumbnails';

/**
 * A file's thumbnail, decoration beside its name (the link keeps the name as its accessible name).
 * `source` gives the file's download URL; for a private bucket that takes a download secret, so it
 * is asked for only once the row scrolls into view.
 */
export function Thumbnail({ source }: { source: () => string | Promise<string> }) {
  const [url, setUrl] = useState<string>();
  const [failed, setFailed] = useState(false);
  const holder = useRef<HTMLSpanElement>(null);
  // Asked for once per file (the row's key): a new render of the list makes no new secret.
  const once = useRef(source);
  useEffect(() => {
    const element = holder.current;
    if (!element) return;
    let cancelled = false;
    const load = () => {
      Promise.resolve(once.current()).then(
        (download) => cancelled || setUrl(thumbnailUrl(download)),
        () => cancelled || setFailed(true),
      );
    };
    const observer = new IntersectionObserver((entries) => {
      if (!entries.some((entry) => entry.isIntersecting)) return;
      observer.disconnect();
      load();
    });
    observer.observe(element);
    return () => {
      cancelled = true;
      observer.disconnect();
    };
  }, []);
  return (
    <span class="thumb" ref={holder} aria-hidden="true">
      {url && !failed && <img src={url} alt="" width={THUMBNAIL_SIZE} height={THUMBNAIL_SIZE} decoding="async" onError={() => setFailed(true)} />}
    </span>
  );
}
