import { crc32, deflateSync } from 'node:zlib';
import sharp, { type Sharp } from 'sharp';
import type { TestService } from './service.js';

/** Images the tests make themselves, with sharp: every property a test checks is put there on purpose. */

export interface MadeImage {
  width: number;
  height: number;
  channels?: 3 | 4;
  /** A solid colour, or noise (which compresses like a photograph). */
  fill?: { r: number; g: number; b: number; alpha?: number } | 'noise';
}

function canvas({ width, height, channels = 3, fill = { r: 40, g: 120, b: 200 } }: MadeImage): Sharp {
  if (fill === 'noise') return sharp({ create: { width, height, channels, background: 'black', noise: { type: 'gaussian', mean: 128, sigma: 40 } } });
  return sharp({ create: { width, height, channels, background: fill } });
}

export const makeJpeg = (image: MadeImage, { orientation, gps }: { orientation?: number; gps?: boolean } = {}) => {
  let made = canvas(image).jpeg({ quality: 85 });
  if (orientation || gps) {
    made = made.withMetadata({
      ...(orientation ? { orientation } : {}),
      ...(gps ? { exif: { IFD0: { Copyright: 'test camera' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '48/1 51/1 2976/100' } } } : {}),
    });
  }
  return made.toBuffer();
};
export const makePng = (image: MadeImage) => canvas(image).png().toBuffer();
export const makeWebp = (image: MadeImage) => canvas(image).webp().toBuffer();
export const makeGif = (image: MadeImage) => canvas(image).gif().toBuffer();
export const makeAvif = (image: MadeImage) => canvas(image).avif({ effort: 0 }).toBuffer();

/** What sharp reads back from a body: format, size, alpha, orientation and EXIF. */
export async function described(bytes: Buffer) {
  const { format, width, height, hasAlpha, orientation, exif, icc } = await sharp(bytes).metadata();
  return { format, width, height, hasAlpha, orientation, exif, icc };
}

/** The colour of one pixel. */
export async function pixel(bytes: Buffer, x: number, y: number): Promise<number[]> {
  const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
  const at = (y * info.width + x) * info.channels;
  return [...data.subarray(at, at + info.channels)];
}

const BOUNDARY = '----filestore-image-test-5b1c';

/** Uploads `bytes` as `fileName` through UploadFile, as a client does; returns the FileKey and Path. */
export async function uploadBytes(service: TestService, token: string, bucketId: number, fileName: string, bytes: Buffer): Promise<{ fileKey: number; path: string }> {
  const payload = Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="File"; filename="${fileName}"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    bytes,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
  const response = await service.app.inject({
    method: 'POST',
    url: `/API/UploadFile?AccessToken=${encodeURIComponent(token)}&BucketId=${bucketId}&AliveDays=1`,
    payload,
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
  });
  const body = response.json();
  if (body.Code !== 0) throw new Error(`upload failed: ${response.body}`);
  return { fileKey: body.FileKey as number, path: new URL(body.Path as string).pathname };
}

/** The variants recorded for a file: their keys and sizes. */
export async function variantRows(service: TestService, fileKey: number) {
  return service.app.db
    .selectFrom('image_variants')
    .innerJoin('files', 'files.storage_key', 'image_variants.source_key')
    .select(['image_variants.variant_key', 'image_variants.size_bytes', 'image_variants.format', 'image_variants.last_used_at'])
    .where('files.file_key', '=', fileKey)
    .execute();
}

/**
 * A real PNG of width × height pixels, 1-bit grey, made without sharp: the bytes of a 144-megapixel
 * image in a fraction of a second, its rows all white.
 */
export function makeHugePng(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
    return Buffer.concat([head, data, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([1, 0, 0, 0, 0], 8); // bit depth 1, greyscale, deflate, no filter method, no interlace
  const row = Buffer.alloc(1 + Math.ceil(width / 8), 0xff);
  row[0] = 0;
  const rows = Buffer.alloc(row.length * height);
  for (let y = 0; y < height; y++) row.copy(rows, y * row.length);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows, { level: 1 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
