import { FileStoreError } from '@filestore/client';

export interface Notice {
  kind: 'error' | 'success';
  text: string;
}

export type Notify = (notice: Notice | undefined) => void;

/** The envelope's Message (and Items) of a refusal, or a plain text for anything else. */
export function failure(error: unknown): Notice {
  if (error instanceof FileStoreError) return { kind: 'error', text: error.text };
  return { kind: 'error', text: error instanceof Error ? error.message : String(error) };
}
