import { createHash } from 'node:crypto';
import { readJson, stateFile, writePrivateJson, type Env } from './settings.js';

/**
 * The upload URLs of unfinished resumable uploads, by file: a run stopped with Ctrl-C leaves them,
 * and the same command run again goes on from where the service is. A file that changed (size or
 * modification time) starts over.
 */
export class UploadState {
  #urls: Record<string, { url: string; at: string }> = {};
  #saving = Promise.resolve();
  readonly #file: string;

  private constructor(env: Env) {
    this.#file = stateFile(env, 'uploads.json');
  }

  static async open(env: Env): Promise<UploadState> {
    const state = new UploadState(env);
    state.#urls = (await readJson<Record<string, { url: string; at: string }>>(state.#file).catch(() => undefined)) ?? {};
    return state;
  }

  static key(parts: { service: string; bucketId: number; path: string; size: number; modified: number; name: string }): string {
    return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
  }

  get(key: string): string | undefined {
    return this.#urls[key]?.url;
  }

  set(key: string, url: string): Promise<void> {
    this.#urls[key] = { url, at: new Date().toISOString() };
    return this.#save();
  }

  forget(key: string): Promise<void> {
    if (!(key in this.#urls)) return this.#saving;
    delete this.#urls[key];
    return this.#save();
  }

  /** Saved one after another, so the last state is what stays. */
  #save(): Promise<void> {
    const snapshot = { ...this.#urls };
    this.#saving = this.#saving.then(() => writePrivateJson(this.#file, snapshot));
    return this.#saving;
  }

  flush(): Promise<void> {
    return this.#saving;
  }
}
