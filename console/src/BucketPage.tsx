import { useCallback, useEffect, useState } from 'preact/hooks';
import type { Bucket, FileStore, StoredFile } from '@filestore/client';
import { FileTable } from './FileTable';
import { failure, type Notify } from './notices';
import { Uploads } from './Uploads';

export function BucketPage({ api, bucketId, notify }: { api: FileStore; bucketId: number; notify: Notify }) {
  const [bucket, setBucket] = useState<Bucket>();
  const [files, setFiles] = useState<StoredFile[]>();

  const loadFiles = useCallback(
    () =>
      api.viewAllFiles(bucketId).then(
        (answer) => setFiles(answer.AllFiles),
        (error) => notify(failure(error)),
      ),
    [api, bucketId],
  );
  useEffect(() => {
    setBucket(undefined);
    setFiles(undefined);
    api.viewBucketDetail(bucketId).then(setBucket, (error) => notify(failure(error)));
    void loadFiles();
  }, [api, bucketId]);

  return (
    <section>
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href="#/">All buckets</a>
      </nav>
      <div class="heading">
        <h1>{bucket?.BucketName ?? 'Bucket'}</h1>
        {bucket && (
          <p class="flags">
            <span class={bucket.OpenToRead ? 'flag on' : 'flag'}>{bucket.OpenToRead ? 'Open to read' : 'Private downloads'}</span>
            <span class={bucket.OpenToUpload ? 'flag on' : 'flag'}>{bucket.OpenToUpload ? 'Open to upload' : 'Owner uploads only'}</span>
          </p>
        )}
      </div>
      <Uploads api={api} bucketId={bucketId} onUploaded={loadFiles} />
      {/* Both first: which link a file gets (its InternetPath, or a one-use secret) depends on the bucket. */}
      {files === undefined || bucket === undefined ? (
        <p class="hint">Loading files…</p>
      ) : (
        <FileTable api={api} files={files} openToRead={bucket.OpenToRead} notify={notify} onChanged={loadFiles} />
      )}
    </section>
  );
}
