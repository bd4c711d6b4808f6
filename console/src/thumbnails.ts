/**
 * Thumbnails and previews through the service's image transformations: the file list shows a small
 * square variant beside each image, the preview a variant the size of the screen, never the
 * original's full size.
 */

/** What the service resizes (it judges the content; the extension says which files to ask for). */
const RESIZED = new Set(['.png', '.jpg', '.jpeg', '.gif', '.webp', '.avif']);

export const hasThumbnail = (extension: string): boolean => RESIZED.has(extension.toLowerCase());

/** CSS pixels of a thumbnail's side in the file list. */
export const THUMBNAIL_SIZE = 40;

/** A download URL with image options added (it may carry a secret's `sec` already). */
function withOptions(url: string, options: Record<string, string | number>): string {
  const target = new URL(url, window.location.href);
  for (const [name, value] of Object.entries(options)) target.searchParams.set(name, String(value));
  return target.href;
}

/** A square of the thumbnail's size in device pixels, in the best format the browser takes. */
export function thumbnailUrl(url: string): string {
  const side = Math.min(4096, Math.round(THUMBNAIL_SIZE * Math.min(window.devicePixelRatio || 1, 3)));
  return withOptions(url, { square: 'true', w: side, format: 'auto' });
}

/** Within the screen, in device pixels: what a preview can show at most. */
export function screenSizedUrl(url: string): string {
  const scale = Math.min(window.devicePixelRatio || 1, 3);
  const side = (css: number) => Math.max(1, Math.min(4096, Math.round(css * scale)));
  return withOptions(url, { w: side(window.screen.width), h: side(window.screen.height), format: 'auto' });
}
