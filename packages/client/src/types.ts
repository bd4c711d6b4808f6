import type { Envelope, Result } from './operations.js';
import type { bucketShape, fileShape, Infer } from './shapes.js';

/** A bucket, as ViewMyBuckets and ViewBucketDetail give it. */
export interface Bucket {
  BucketId: number;
  BucketName: string;
  OpenToRead: boolean;
  OpenToUpload: boolean;
  /** The AppId of the app that owns it. */
  BelongingAppId: string;
  /** Its files that have not expired. */
  FileCount: number;
}

/** A file, as ViewOneFile, ViewMultiFiles and ViewAllFiles give it. */
export interface StoredFile {
  FileKey: number;
  RealFileName: string;
  /** With its dot (".png"), or empty. */
  FileExtension: string;
  /** Bytes. */
  JFileSize: number;
  DownloadTimes: number;
  BucketId: number;
  /** ISO 8601 UTC with milliseconds. */
  UploadTime: string;
  AliveDays: number;
  /** Where it is downloaded: <origin>/<BucketName>/<RealFileName>. */
  InternetPath: string;
}

// The interfaces above are the wire's shapes (shapes.ts), checked when the SDK compiles.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameBucket: Same<Bucket, Infer<typeof bucketShape>> = true;
const sameFile: Same<StoredFile, Infer<typeof fileShape>> = true;
void sameBucket;
void sameFile;

export type { Envelope };
export type TokenGrant = Result<'AccessToken'>;
export type BucketCreated = Result<'CreateBucket'>;
export type BucketList = Result<'ViewMyBuckets'>;
export type BucketDetail = Result<'ViewBucketDetail'>;
export type OneFile = Result<'ViewOneFile'>;
export type MultiFiles = Result<'ViewMultiFiles'>;
export type AllFiles = Result<'ViewAllFiles'>;
export type FileUploaded = Result<'UploadFile'>;
export type DownloadSecret = Result<'GenerateSecret'>;
