export type PreviewKind = 'image' | 'audio' | 'video' | 'pdf' | 'text';

/** The kinds the service serves inline (see the download headers): only those are previewed. */
const KINDS: Record<string, PreviewKind> = {
  '.png': 'image',
  '.jpg': 'image',
  '.jpeg': 'image',
  '.gif': 'image',
  '.webp': 'image',
  '.avif': 'image',
  '.bmp': 'image',
  '.ico': 'image',
  '.apng': 'image',
  '.mp3': 'audio',
  '.wav': 'audio',
  '.ogg': 'audio',
  '.oga': 'audio',
  '.m4a': 'audio',
  '.flac': 'audio',
  '.opus': 'audio',
  '.aac': 'audio',
  '.weba': 'audio',
  '.mp4': 'video',
  '.webm': 'video',
  '.ogv': 'video',
  '.mov': 'video',
  '.m4v': 'video',
  '.pdf': 'pdf',
  '.txt': 'text',
  '.log': 'text',
  '.csv': 'text',
  '.md': 'text',
  '.json': 'text',
};

export const previewKind = (extension: string): PreviewKind | undefined => KINDS[extension.toLowerCase()];
