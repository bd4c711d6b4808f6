import type { JsonSchema } from './operation.js';

/** The objects the operations return, as JSON schemas for /docs. */

const object = (properties: Record<string, JsonSchema>): JsonSchema => ({ type: 'object', properties, required: Object.keys(properties) });

/** Code and Message: the answers of the routes outside /API. */
export const envelopeSchema = object({ Code: { type: 'integer' }, Message: { type: 'string' } });

export const bucketFields: Record<string, JsonSchema> = {
  BucketId: { type: 'integer' },
  BucketName: { type: 'string' },
  OpenToRead: { type: 'boolean', description: 'Anyone may download its files; any app may list them.' },
  OpenToUpload: { type: 'boolean', description: 'Any app may upload into it.' },
  BelongingAppId: { type: 'string', description: 'The app that owns it.' },
  FileCount: { type: 'integer', description: 'Its files that have not expired.' },
};

export const bucketSchema = object(bucketFields);

export const fileSchema = object({
  FileKey: { type: 'integer' },
  RealFileName: { type: 'string', description: 'The uploaded file name, reduced to a safe last segment.' },
  FileExtension: { type: 'string', description: 'With its dot (".png"), or empty.' },
  JFileSize: { type: 'integer', description: 'Bytes.' },
  DownloadTimes: { type: 'integer', description: 'Completed downloads.' },
  BucketId: { type: 'integer' },
  UploadTime: { type: 'string', format: 'date-time' },
  AliveDays: { type: 'integer', description: 'The file expires this many days after UploadTime.' },
  InternetPath: { type: 'string', description: 'Where the file is downloaded: <PUBLIC_URL>/<BucketName>/<RealFileName>.' },
});
