import type { Bucket } from '../services/buckets.js';
import type { FileWithBucket } from '../services/files.js';

/** The wire's objects: PascalCase, as the specification names their fields. */

/** The File object of the specification: exactly its nine fields. */
export interface FileView {
  FileKey: number;
  RealFileName: string;
  FileExtension: string;
  JFileSize: number;
  DownloadTimes: number;
  BucketId: number;
  UploadTime: string;
  AliveDays: number;
  InternetPath: string;
}

/** The Bucket object of the specification. */
export interface BucketView {
  BucketId: number;
  BucketName: string;
  OpenToRead: boolean;
  OpenToUpload: boolean;
  BelongingAppId: string;
  FileCount: number;
}

/** `<base>/<BucketName>/<RealFileName>`, each segment percent-encoded; computed when read, so it follows renames. */
export function internetPath(baseUrl: string, bucketName: string, fileName: string): string {
  return `${baseUrl}/${encodeURIComponent(bucketName)}/${encodeURIComponent(fileName)}`;
}

/** `pendingDownloads`: this instance's downloads of the file not yet flushed, so a client sees its own at once. */
export function fileView(row: FileWithBucket, baseUrl: string, pendingDownloads = 0): FileView {
  return {
    FileKey: row.file_key,
    RealFileName: row.real_file_name,
    FileExtension: row.file_extension,
    JFileSize: row.size_bytes,
    DownloadTimes: row.download_times + pendingDownloads,
    BucketId: row.bucket_id,
    UploadTime: row.upload_time.toISOString(),
    AliveDays: row.alive_days,
    InternetPath: internetPath(baseUrl, row.bucket_name, row.real_file_name),
  };
}

export function bucketView(bucket: Bucket): BucketView {
  return {
    BucketId: bucket.bucketId,
    BucketName: bucket.name,
    OpenToRead: bucket.openToRead,
    OpenToUpload: bucket.openToUpload,
    BelongingAppId: bucket.appId,
    FileCount: bucket.fileCount,
  };
}
