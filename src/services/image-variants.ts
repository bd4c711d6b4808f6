import { LRUCache } from 'lru-cache';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Counter } from 'prom-client';
import type { ByteRange } from '../storage/blob-store.js';
import { isStorageError } from '../storage/errors.js';
import type { Admission } from './admission.js';
import type { ServiceContext } from './context.js';
import type { Downloadable } from './downloadable-files.js';
import { negotiateFormat, variantName, type AskedFormat, type ImageFormat, type ImageOptions } from './image-options.js';
import { PROBE_BYTES, probeImage } from './image-probe.js';
import { RENDERER, renderVariant } from './image-render.js';
import { evictPastBudget, findVariant, recordVariant, touchVariants, type VariantRecord } from './image-variant-rows.js';
import { RenderSlots } from './render-slots.js';

export interface ImageSettings {
  /** Width × height of a frame past which an image is served unchanged. */
  readonly maxInputPixels: number;
  /** Files larger than this are served unchanged: a render holds its file whole in memory. */
  readonly maxInputBytes: number;
  /** What the kept variants may add up to; the least recently served go first. */
  readonly cacheBytes: number;
  readonly concurrency: number;
  readonly queueLength: number;
}

export interface ImageMetrics {
  /** Renders by outcome: `rendered`, or `unchanged` (did not decode, or too many pixels once decoded). */
  readonly renders: Counter<'outcome'>;
  /** Variants served, by where their bytes came from: `store` (made before, on any instance) or `render` (made for this request). */
  readonly served: Counter<'from'>;
}

/** A variant to serve: what it will be, known before any pixel is touched. */
export interface VariantPlan {
  readonly variantKey: string;
  readonly format: ImageFormat;
  /** Strong, quoted: the file's sha256 with the transformation and the format served. */
  readonly etag: string;
  readonly options: ImageOptions;
  readonly target: Exclude<AskedFormat, 'auto'>;
  /** The file's own format, when its first bytes were read for this plan. */
  readonly source?: ImageFormat;
}

/** A variant whose bytes exist: kept in the store, or just rendered. */
export interface ReadyVariant extends VariantPlan {
  readonly size: number;
  readonly rendered?: Buffer;
}

/** How many facts about variants and files each instance remembers; they never go stale (keys are immutable), so any bound works. */
const REMEMBERED = 10_000;
/** At most one eviction (a scan of the variants' rows) per instance in this time. */
const EVICTION_INTERVAL_MS = 1000;
/** A kept variant read whole below this size: its body is one buffer, usually from the small-read cache. */
const WHOLE_BODY_BYTES = 64 * 1024;

/**
 * Image variants of downloads (CONTRACT section 16): planned from the file's first bytes, rendered
 * once per instance however many ask at once, kept in the storage backend under a key derived from
 * the file's storage key and the options (so every instance serves them), recorded in the database
 * with their size and last use, and bounded by the cache budget.
 */
export class ImageVariants {
  readonly slots: RenderSlots;
  /** Variants known to be kept, by key: a repeated request asks neither the database nor the probe. */
  readonly #known = new LRUCache<string, VariantRecord>({ max: REMEMBERED });
  /** Files (by storage key) that are no raster image this service renders: served unchanged without another look. */
  readonly #unchanged = new LRUCache<string, true>({ max: REMEMBERED });
  /** Renders in progress, by variant key: the requests for one variant share one render. */
  readonly #rendering = new Map<string, Promise<Buffer | undefined>>();
  /** Variants served since the last flush; their last use is written in one statement. */
  #touched = new Set<string>();
  /** Variants being stored and recorded after their render was answered. */
  readonly #keeping = new Set<Promise<unknown>>();
  #eviction: Promise<void> | undefined;
  #lastEviction = -Infinity;
  /** Starts the eviction that waits for its turn at once. */
  #evictNow: (() => void) | undefined;
  /** Variants were kept while an eviction was under way: one more after it. */
  #evictAgain = false;

  constructor(
    private readonly ctx: Pick<ServiceContext, 'db' | 'storage' | 'log'>,
    private readonly settings: ImageSettings,
    private readonly metrics: ImageMetrics,
    /** Per-app admission of renders (contract section 18): the owner's turn, taken before a slot. */
    private readonly admission: Admission,
  ) {
    this.slots = new RenderSlots(settings.concurrency, settings.queueLength);
  }

  /**
   * What `file` is served as under `options` for a client that accepts `accept`: a variant's plan,
   * or undefined to serve the file unchanged (not a raster image, too large, does not decode).
   */
  async plan(file: Downloadable, options: ImageOptions, accept: string | undefined): Promise<VariantPlan | undefined> {
    if (this.#unchanged.get(file.storageKey)) return undefined;
    const target = negotiateFormat(options.format, accept);
    const name = variantName(options, target);
    const variantKey = createHash('sha256').update(`${RENDERER}\n${file.storageKey}\n${name}`).digest('hex');
    const etag = (format: ImageFormat) => `"${file.sha256}-${createHash('sha256').update(`${RENDERER}\n${name}\n${format}`).digest('hex').slice(0, 16)}"`;
    const known = this.#known.get(variantKey) ?? (await this.#recorded(variantKey));
    if (known) return { variantKey, format: known.format, etag: etag(known.format), options, target };

    const source = await this.#rasterFormat(file);
    if (!source) return undefined;
    const format = target === 'origin' ? source : target;
    return { variantKey, format, etag: etag(format), options, target, source };
  }

  /** The variant's bytes made or found; undefined when the file turns out not to render (then it is served unchanged). */
  async ready(file: Downloadable, plan: VariantPlan): Promise<ReadyVariant | undefined> {
    const known = this.#known.get(plan.variantKey);
    if (known) return { ...plan, size: known.size };
    const rendered = await this.#render(file, plan);
    return rendered ? { ...plan, size: rendered.length, rendered } : undefined;
  }

  /** The inclusive `range` of a ready variant's bytes; a kept variant whose bytes the store lost is made again. */
  async body(file: Downloadable, variant: ReadyVariant, range: ByteRange): Promise<Buffer | Readable> {
    if (variant.rendered) {
      this.metrics.served.inc({ from: 'render' });
      return variant.rendered.subarray(range.start, range.end + 1);
    }
    const length = range.end - range.start + 1;
    try {
      const body = length <= WHOLE_BODY_BYTES ? await this.ctx.storage.read(variant.variantKey, range) : (await this.ctx.storage.open(variant.variantKey, range)).stream;
      this.metrics.served.inc({ from: 'store' });
      this.#touched.add(variant.variantKey);
      return body;
    } catch (error) {
      if (!isStorageError(error, 'not-found')) throw error;
    }
    // Evicted by another instance, or removed with a file that was deleted since its row was read.
    this.#known.delete(variant.variantKey);
    const bytes = await this.#render(file, variant);
    // Served as planned or not at all: its headers are sent already.
    if (!bytes) throw new Error('a kept image variant was lost and could not be made again');
    this.metrics.served.inc({ from: 'render' });
    return bytes.subarray(range.start, range.end + 1);
  }

  /** Writes when the variants served since the last call were last used; for a job on a short interval. */
  async flushTouches(): Promise<number> {
    const keys = [...this.#touched];
    this.#touched = new Set();
    for (let i = 0; i < keys.length; i += 1000) await touchVariants(this.ctx.db, keys.slice(i, i + 1000));
    return keys.length;
  }

  /** Forgets what this instance remembers of these variants (removed with their files). */
  forget(variantKeys: readonly string[]): void {
    for (const key of variantKeys) this.#known.delete(key);
  }

  async #recorded(variantKey: string): Promise<VariantRecord | undefined> {
    const record = await findVariant(this.ctx.db, variantKey);
    if (record) this.#known.set(variantKey, record);
    return record;
  }

  /** The file's raster format from its first bytes, when it is one this service renders and within the limits. */
  async #rasterFormat(file: Downloadable): Promise<ImageFormat | undefined> {
    if (file.size === 0 || file.size > this.settings.maxInputBytes) return this.#leaveUnchanged(file);
    const head = await this.ctx.storage.read(file.storageKey, { start: 0, end: Math.min(file.size, PROBE_BYTES) - 1 });
    const probe = await probeImage(head);
    if (probe.kind !== 'raster' || (probe.pixels !== undefined && probe.pixels > this.settings.maxInputPixels)) return this.#leaveUnchanged(file);
    return probe.format;
  }

  #leaveUnchanged(file: Downloadable): undefined {
    this.#unchanged.set(file.storageKey, true);
    return undefined;
  }

  /**
   * One render per variant however many ask at once. The bytes are answered as soon as they are
   * made and kept meanwhile: requests that arrive while they are being stored share them too.
   */
  #render(file: Downloadable, plan: VariantPlan): Promise<Buffer | undefined> {
    let rendering = this.#rendering.get(plan.variantKey);
    if (!rendering) {
      const made = this.#renderOnce(file, plan);
      rendering = made;
      this.#rendering.set(plan.variantKey, made);
      const kept = made
        .then((bytes) => bytes && this.#keep(file, plan.variantKey, plan.format, bytes))
        .catch(() => {})
        .finally(() => {
          this.#rendering.delete(plan.variantKey);
          this.#keeping.delete(kept);
        });
      this.#keeping.add(kept);
    }
    return rendering;
  }

  async #renderOnce(file: Downloadable, plan: VariantPlan): Promise<Buffer | undefined> {
    const source = plan.source ?? (await this.#rasterFormat(file));
    if (!source) return undefined;
    // A render is heavy work of the app that owns the file: its turn first, then one of the
    // instance's slots, so one app's thumbnails never take every slot from the others.
    const release = await this.admission.admit(file.appId);
    let rendered: Awaited<ReturnType<typeof renderVariant>>;
    try {
      rendered = await this.slots.run(async () => {
        const input = await this.ctx.storage.read(file.storageKey, { start: 0, end: file.size - 1 });
        return renderVariant(input, source, plan.options, plan.target, { maxInputPixels: this.settings.maxInputPixels });
      });
    } finally {
      release();
    }
    this.metrics.renders.inc({ outcome: rendered ? 'rendered' : 'unchanged' });
    if (!rendered) {
      this.#leaveUnchanged(file);
      return undefined;
    }
    return rendered.bytes;
  }

  /** Stores and records a rendered variant; a failure only costs a render next time, so it is logged, not thrown. */
  async #keep(file: Downloadable, variantKey: string, format: ImageFormat, bytes: Buffer): Promise<void> {
    const { storage, db, log } = this.ctx;
    try {
      const written = await storage.write(Readable.from([bytes]), { maxBytes: bytes.length, lengthAtMost: bytes.length, key: variantKey });
      await written.commit();
      if (!(await recordVariant(db, { variantKey, sourceKey: file.storageKey, format, size: bytes.length }))) {
        // The file was deleted while it rendered: its variant goes too.
        await storage.remove([variantKey]);
        return;
      }
      this.#known.set(variantKey, { format, size: bytes.length });
    } catch (error) {
      log.warn({ err: error }, 'an image variant was served but not kept');
      return;
    }
    this.#evictSoon();
  }

  /**
   * Keeps the variants within the budget: at once when none ran in the last EVICTION_INTERVAL_MS,
   * else at the end of it, so that a burst of renders costs one eviction, not one each.
   */
  #evictSoon(): void {
    if (this.#eviction) {
      this.#evictAgain = true;
      return;
    }
    const wait = Math.max(0, this.#lastEviction + EVICTION_INTERVAL_MS - performance.now());
    this.#eviction = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, wait).unref();
      this.#evictNow = () => {
        clearTimeout(timer);
        resolve();
      };
    })
      .then(() => {
        this.#evictNow = undefined;
        this.#lastEviction = performance.now();
        return this.#evict();
      })
      .catch((error: unknown) => this.ctx.log.warn({ err: error }, 'image variants past the cache budget were not removed'))
      .finally(() => {
        this.#eviction = undefined;
        if (this.#evictAgain) {
          this.#evictAgain = false;
          this.#evictSoon();
        }
      });
  }

  async #evict(): Promise<void> {
    const keys = await evictPastBudget(this.ctx.db, this.settings.cacheBytes);
    if (keys.length === 0) return;
    this.forget(keys);
    await this.ctx.storage.remove(keys);
  }

  /** Resolves once the variants rendered so far are kept and the budget kept after them, an eviction waiting for its turn run now (for shutdown and tests). */
  async settled(): Promise<void> {
    while (this.#keeping.size > 0 || this.#eviction) {
      await Promise.all(this.#keeping);
      this.#evictNow?.();
      await this.#eviction;
    }
  }
}
