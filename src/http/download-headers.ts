import { create as formatContentDisposition } from 'content-disposition';
import { fileExtension } from '../services/file-names.js';

/**
 * Types a browser may show inline in the service's origin without running anything there: images
 * other than SVG, audio, video, PDF and plain text. Everything else (HTML, SVG, JavaScript, XML,
 * unknown extensions…) is sent as an opaque attachment.
 */
const INLINE_TYPES: Readonly<Record<string, string>> = {
  '.apng': 'image/apng',
  '.avif': 'image/avif',
  '.bmp': 'image/bmp',
  '.gif': 'image/gif',
  '.ico': 'image/vnd.microsoft.icon',
  '.jpeg': 'image/jpeg',
  '.jpg': 'image/jpeg',
  '.png': 'image/png',
  '.webp': 'image/webp',
  '.aac': 'audio/aac',
  '.flac': 'audio/flac',
  '.m4a': 'audio/mp4',
  '.mp3': 'audio/mpeg',
  '.oga': 'audio/ogg',
  '.ogg': 'audio/ogg',
  '.opus': 'audio/opus',
  '.wav': 'audio/wav',
  '.weba': 'audio/webm',
  '.m4v': 'video/mp4',
  '.mov': 'video/quicktime',
  '.mp4': 'video/mp4',
  '.ogv': 'video/ogg',
  '.webm': 'video/webm',
  '.pdf': 'application/pdf',
  '.txt': 'text/plain; charset=utf-8',
};

export const OPAQUE_TYPE = 'application/octet-stream';

export interface DownloadHeaders {
  contentType: string;
  contentDisposition: string;
}

/** The plain-ASCII `filename` for clients that do not read `filename*`: nothing that could end or escape the header value. */
function asciiFallback(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20-\x7e]|["\\%]/g, '_');
}

/**
 * Content-Type and Content-Disposition of a download. The type comes from the stored file name
 * only; `attachment` is forced for every type not safe inline. The name shown is the stored one,
 * or `suggestedName` (already sanitized), encoded per RFC 6266/5987.
 */
export function downloadHeaders(storedName: string, options: { attachment: boolean; suggestedName?: string }): DownloadHeaders {
  const inlineType = INLINE_TYPES[fileExtension(storedName).toLowerCase()];
  const name = options.suggestedName ?? storedName;
  return {
    contentType: inlineType ?? OPAQUE_TYPE,
    contentDisposition: formatContentDisposition(name, {
      type: inlineType && !options.attachment ? 'inline' : 'attachment',
      fallback: asciiFallback(name),
    }),
  };
}
