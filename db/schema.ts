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

export interface Database {
  apps: AppsTable;
  access_tokens: AccessTokensTable;
  buckets: BucketsTable;
  files: FilesTable;
  download_secrets: DownloadSecretsTable;
  service_state: ServiceStateTable;
}

export type AppRow = Selectable<AppsTable>;
export type BucketRow = Selectable<BucketsTable>;
export type FileRow = Selectable<FilesTable>;
export type NewFile = Insertable<FilesTable>;
