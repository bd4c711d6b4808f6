/** Where file bytes live. The disk implementation is the only one today; object storage may follow. */
export interface BlobStore {
  /** Creates what the store needs (folders); safe to call on every start. */
  prepare(): Promise<void>;
  /** Whether new bytes can be written right now. */
  isWritable(): Promise<boolean>;
  /** Removes stored bytes; keys with no bytes are ignored, so a retried removal is harmless. */
  remove(storageKeys: readonly string[]): Promise<void>;
}
