import type { Migration } from 'kysely';
import * as m0001 from './0001_initial.js';
import * as m0002 from './0002_instance_leases.js';
import * as m0003 from './0003_resumable_uploads.js';
import * as m0004 from './0004_bucket_file_counts.js';
import * as m0005 from './0005_resumable_completing.js';
import * as m0006 from './0006_bucket_file_count_slots.js';
import * as m0007 from './0007_resumable_lock_count.js';
import * as m0008 from './0008_resumable_upload_owners.js';
import * as m0009 from './0009_image_variants.js';

/** Imported, not read from a folder, so the same list runs from src and from dist. */
export const migrations: Record<string, Migration> = {
  '0001_initial': m0001,
  '0002_instance_leases': m0002,
  '0003_resumable_uploads': m0003,
  '0004_bucket_file_counts': m0004,
  '0005_resumable_completing': m0005,
  '0006_bucket_file_count_slots': m0006,
  '0007_resumable_lock_count': m0007,
  '0008_resumable_upload_owners': m0008,
  '0009_image_variants': m0009,
};
