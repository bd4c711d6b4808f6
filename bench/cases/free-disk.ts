/** Between the download cases and the rest: frees the disk of large uploads. */
import { callJson } from '../load.js';
import type { Context } from './common.js';

/** Deletes the large uploads no later case needs. */
export async function dropExtraLargeFiles(ctx: Context): Promise<void> {
  for (const run of ctx.services) {
    const keep = run.ledger.files.large.filter((file) => file.size === ctx.opts.largeSize).at(-1);
    for (const file of run.ledger.files.large) {
      if (file === keep || run.ledger.deleted.has(file.key)) continue;
      const reply = await callJson(run.instance.origin, '/API/DeleteFile', { AccessToken: run.instance.token, FileKey: file.key });
      if (reply.json.Code === 0) run.ledger.deleted.add(file.key);
    }
  }
}
