import sharp from 'sharp';
import type { ImageFormat } from './image-options.js';

/** The first bytes of a file that its format and size are read from: small reads are kept in memory, so a repeated probe costs nothing. */
export const PROBE_BYTES = 64 * 1024;

export type Probe =
  /** A raster image sharp can decode, of this many pixels per frame (unknown when its header lies past the probe). */
  | { readonly kind: 'raster'; readonly format: ImageFormat; readonly pixels: number | undefined }
  /** Anything else, SVG included: served unchanged. */
  | { readonly kind: 'other' };

const ascii = (bytes: Buffer, start: number, end: number) => bytes.subarray(start, end).toString('latin1');

/** The raster format of the content by its signature, never by the file's name. */
export function rasterFormat(head: Buffer): ImageFormat | undefined {
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'jpeg';
  if (head.length >= 8 && head.subarray(0, 8).equals(PNG_SIGNATURE)) return 'png';
  if (head.length >= 6 && (ascii(head, 0, 6) === 'GIF87a' || ascii(head, 0, 6) === 'GIF89a')) return 'gif';
  if (head.length >= 12 && ascii(head, 0, 4) === 'RIFF' && ascii(head, 8, 12) === 'WEBP') return 'webp';
  if (head.length >= 12 && ascii(head, 4, 8) === 'ftyp' && isAvifBrand(head)) return 'avif';
  return undefined;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** An ISO-BMFF file whose major or compatible brands say AVIF (HEIC and other HEIF brands are not for this service). */
function isAvifBrand(head: Buffer): boolean {
  const boxSize = head.readUInt32BE(0);
  const end = Math.min(head.length, boxSize >= 16 ? boxSize : 16);
  for (let at = 8; at + 4 <= end; at += 4) {
    if (at === 12) continue; // the minor version
    const brand = ascii(head, at, at + 4);
    if (brand === 'avif' || brand === 'avis') return true;
  }
  return false;
}

/**
 * What the first bytes of a file say: a raster image (and its pixels per frame, read from the
 * header without decoding anything), or something to serve unchanged.
 */
export async function probeImage(head: Buffer): Promise<Probe> {
  const format = rasterFormat(head);
  if (!format) return { kind: 'other' };
  try {
    // limitInputPixels off: this only reads the header, and the caller judges the size itself.
    const { width, height, pageHeight } = await sharp(head, { limitInputPixels: false, failOn: 'none' }).metadata();
    return { kind: 'raster', format, pixels: width && height ? width * (pageHeight ?? height) : undefined };
  } catch {
    // The header reaches past the probe (a JPEG with large metadata first): the render reads it whole.
    return { kind: 'raster', format, pixels: undefined };
  }
}
