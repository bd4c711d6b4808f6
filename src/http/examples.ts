/**
 * Example values for /docs, one consistent story: the app 5HpwAAfavKDm9rebRYJvMg keeps its holiday
 * photos in bucket 1. They show a reader (and a client generator) what real answers look like.
 */

export const exampleAppId = '5HpwAAfavKDm9rebRYJvMg';
export const exampleBaseUrl = 'https://files.example.com';

export const exampleBucket = {
  BucketId: 1,
  BucketName: 'holiday-photos',
  OpenToRead: true,
  OpenToUpload: false,
  BelongingAppId: exampleAppId,
  FileCount: 2,
};

export const exampleFile = {
  FileKey: 7,
  RealFileName: 'beach 2026.jpg',
  FileExtension: '.jpg',
  JFileSize: 482133,
  DownloadTimes: 12,
  BucketId: 1,
  UploadTime: '2026-11-20T10:04:05.123Z',
  AliveDays: 30,
  InternetPath: `${exampleBaseUrl}/holiday-photos/beach%202026.jpg`,
};

export const otherExampleFile = {
  ...exampleFile,
  FileKey: 8,
  RealFileName: 'harbour.png',
  FileExtension: '.png',
  JFileSize: 91204,
  DownloadTimes: 0,
  InternetPath: `${exampleBaseUrl}/holiday-photos/harbour.png`,
};
