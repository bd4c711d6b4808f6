import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';

/** Written by the database, readable as a Date. */
type CreatedAt = ColumnType<Date, Date | undefined, never>;

export interface AppsTable {
  app_id: string;
  /** sha256 of the AppSecret, hex; the secret itself is never stored. */
  secret_hash: string;
  created_at: CreatedAt;
}

export interface AccessTokensTable {
  /** sha256 of the token, hex: a leaked table gives no usable token. */
  token_hash: string;
  app_id: string;
  expires_at: Date;
  created_at: CreatedAt;
}

export interface BucketsTable {
  bucket_id: Generated<number>;
  name: string;
  open_to_read: boolean;
  open_to_upload: boolean;
  app_id: string;
  created_at: CreatedAt;
}

/** A bucket's file rows, expired or not, are the sum of its slots: kept exact by triggers on files (migrations 0004, 0006). */
export interface BucketFileCountsTable {
  bucket_id: number;
  slot: number;
  n: number;
}

export interface FilesTable {
  file_key: Generated<number>;
  bucket_id: number;
  real_file_name: string;
  file_extension: string;
  size_bytes: number;
  download_times: Generated<number>;
  upload_time: Date;
  alive_days: number;
  /** upload_time + alive_days, stored so expiry is one indexed comparison. */
  expires_at: Date;
  /** Name of the bytes in the blob store. */
  storage_key: string;
  sha256: string;
}

export interface DownloadSecretsTable {
  secret_hash: string;
  file_key: number;
  app_id: string;
  uses_left: number;
  created_at: CreatedAt;
}

/** Small facts about the deployment itself, such as whether the first-start app was made. */
export interface ServiceStateTable {
  key: string;
  value: string;
}

/** An incomplete resumable upload: where it goes, how far it got, who holds its lock. */
export interface ResumableUploadsTable {
  upload_id: string;
  app_id: string;
  bucket_id: number;
  file_name: string;
  alive_days: number;
  size_bytes: number;
  offset_bytes: Generated<number>;
  metadata: string;
  created_at: CreatedAt;
  expires_at: Date;
  lock_token: string | null;
  locked_until: Date | null;
  /** Times a request has taken the lock: unchanged since an instance's own last append, nobody else wrote the bytes. */
  lock_count: Generated<number>;
  /** Set once the upload is being turned into a file: the row only shields its bytes from the sweeps. */
  completing_since: Generated<Date | null>;
}

/** A running instance's claim: its temporary writes are its own while its heartbeat is fresh. */
export interface InstanceLeasesTable {
  instance_id: string;
  started_at: CreatedAt;
  heartbeat_at: ColumnType<Date, Date | undefined, Date | undefined>;
}

/** A resized or re-encoded copy of a file's image, kept in the storage backend under variant_key. */
export interface ImageVariantsTable {
  variant_key: string;
  /** The storage key of the file whose bytes it was made from. */
  source_key: string;
  /** What it is encoded as: jpeg, png, webp, avif (or gif). */
  format: string;
  size_bytes: number;
  created_at: CreatedAt;
  /** When it was last served, written in batches: the least recently used go first. */
  last_used_at: ColumnType<Date, Date | undefined, Date | undefined>;
}

export interface Database {
  apps: AppsTable;
  access_tokens: AccessTokensTable;
  buckets: BucketsTable;
  bucket_file_counts: BucketFileCountsTable;
  files: FilesTable;
  download_secrets: DownloadSecretsTable;
  service_state: ServiceStateTable;
  resumable_uploads: ResumableUploadsTable;
  instance_leases: InstanceLeasesTable;
  image_variants: ImageVariantsTable;
}

export type AppRow = Selectable<AppsTable>;
export type BucketRow = Selectable<BucketsTable>;
export type FileRow = Selectable<FilesTable>;
export type NewFile = Insertable<FilesTable>;
export type ResumableUploadRow = Selectable<ResumableUploadsTable>;
