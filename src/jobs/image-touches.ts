import type { ImageVariants } from '../services/image-variants.js';
import type { Job } from './schedule.js';

/** How stale a variant's last use may be in the database: the least recently used go first, to within this. */
const TOUCH_FLUSH_INTERVAL_MS = 10_000;

/** Writes when the variants served lately were last used, in one statement, instead of one write per download. */
export function imageTouchFlushJob(images: ImageVariants): Job {
  return {
    name: 'image-variant-touches',
    intervalMs: TOUCH_FLUSH_INTERVAL_MS,
    runAtStart: false,
    run: async () => (await images.flushTouches()) || undefined,
  };
}
