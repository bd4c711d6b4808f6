/** RealFileNames are kept to at most this many bytes of UTF-8. */
export const MAX_FILE_NAME_BYTES = 255;

// Control characters, and the marks and overrides that make a name display other than it reads
// ("invoice\u202Egnp.exe" shows as "invoiceexe.png").
const HIDDEN = /[\p{Cc}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/gu;

function truncateUtf8(text: string, maxBytes: number): string {
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    const size = Buffer.byteLength(char, 'utf8');
    if (bytes + size > maxBytes) break;
    bytes += size;
    end += char.length;
  }
  return text.slice(0, end);
}

/** The extension with its dot (".png"), or "" when the name has none. */
export function fileExtension(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 && dot < name.length - 1 ? name.slice(dot) : '';
}

/**
 * The client's file name as stored: its last path segment, NFC, without hidden characters, at most
 * 255 bytes (cut from the stem so the extension survives). Undefined when nothing usable is left.
 */
export function sanitizeFileName(clientName: string | undefined): string | undefined {
  const segments = (clientName ?? '').split(/[/\\]/);
  const name = (segments[segments.length - 1] ?? '').normalize('NFC').replace(HIDDEN, '');
  if (name.trim() === '' || name === '.' || name === '..') return undefined;
  if (Buffer.byteLength(name, 'utf8') <= MAX_FILE_NAME_BYTES) return name;
  const extension = fileExtension(name);
  const keep = Buffer.byteLength(extension, 'utf8') <= 32 ? extension : '';
  const stem = truncateUtf8(name.slice(0, name.length - keep.length), MAX_FILE_NAME_BYTES - Buffer.byteLength(keep, 'utf8'));
  return stem.trim() === '' ? undefined : stem + keep;
}
