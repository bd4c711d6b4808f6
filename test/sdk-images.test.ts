import { buffer } from 'node:stream/consumers';
import sharp from 'sharp';
import t from 'tap';
import { FileStore, FileStoreError } from '../packages/client/src/node.js';
import { uniqueBucketName } from './helpers/buckets.js';
import { makePng } from './helpers/images.js';
import { startService } from './helpers/service.js';

/** The SDK's downloads take the image options of CONTRACT section 16. */

t.test('downloads with image options give a variant; bad options are refused before sending', async (t) => {
  const service = await startService(t);
  const url = await service.listen();
  const owner = await service.newApp();
  const client = new FileStore({ url, appId: owner.appId, appSecret: owner.appSecret });
  const bucketName = uniqueBucketName('sdkimg');
  const { BucketId } = await client.createBucket(bucketName, { openToRead: true });
  const stored = await client.uploadFile(BucketId, await makePng({ width: 640, height: 480 }), { fileName: 'photo.png', aliveDays: 1 });

  const variant = await client.downloadFromKey(stored.FileKey, { image: { w: 160, format: 'webp' } });
  t.equal(variant.status, 200);
  t.equal(variant.contentType, 'image/webp');
  const meta = await sharp(await buffer(variant.body!)).metadata();
  t.same([meta.format, meta.width, meta.height], ['webp', 160, 120], 'resized, the aspect kept, converted');

  const square = await client.downloadFromPath(bucketName, 'photo.png', { image: { w: 64, square: true, format: 'auto' } });
  const squareMeta = await sharp(await buffer(square.body!)).metadata();
  t.same([squareMeta.format, squareMeta.width, squareMeta.height], ['heif', 64, 64], 'a square, in the best format the client takes (AVIF)');

  const error = await client.downloadFromKey(stored.FileKey, { image: { w: 0, q: 101 } }).catch((caught: unknown) => caught);
  t.ok(error instanceof FileStoreError, 'a FileStoreError');
  t.match(error, { code: -10, items: ['The field w must be between 1 and 4096.', 'The field q must be between 1 and 100.'] });
});
