/**
 * The flood of the fair-shares case, in a process of its own so that reading its answers never
 * shares the bench's event loop with the probes that time the other app: `clients` connections,
 * each sending `path` (a ViewAllFiles) back to back for `seconds`. A refusal with Retry-After is
 * waited out, as a well-behaved client does; the answers are read to the end and compared with
 * the first whole one. Prints `flooding` when it starts, then one JSON line of totals.
 *
 *   node dist/bench/flood.js <origin> <path> <clients> <seconds>
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'undici';

const [origin, path, clientsText, secondsText] = process.argv.slice(2) as [string, string, string, string];
const deadline = performance.now() + Number(secondsText) * 1000;

export interface FloodTotals {
  /** 200 answers read to the end, each byte-for-byte as long as the first, ending with Code 0. */
  whole: number;
  /** 429 or 503 with Retry-After and the envelope. */
  refused: number;
  /** Anything else: another status, a cut or different answer, a connection error. */
  failed: number;
  problems: string[];
}

const totals: FloodTotals = { whole: 0, refused: 0, failed: 0, problems: [] };
let wholeLength: number | undefined;
const fail = (problem: string) => {
  totals.failed++;
  if (totals.problems.length < 10) totals.problems.push(problem);
};

async function one(client: Client): Promise<void> {
  const response = await client.request({ path, method: 'GET' });
  let length = 0;
  let tail = '';
  // Counted as it passes, not parsed: the bench's cores are better left to the service.
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    length += chunk.length;
    tail = (tail + chunk.toString('latin1')).slice(-16);
  }
  if (response.statusCode === 200) {
    wholeLength ??= length;
    if (length === wholeLength && tail.endsWith('"Code":0}')) totals.whole++;
    else fail(`200 with ${length} bytes (the first whole answer had ${wholeLength}) ending ${JSON.stringify(tail)}`);
    return;
  }
  const retryAfter = Number(response.headers['retry-after']);
  if ((response.statusCode === 429 || response.statusCode === 503) && Number.isInteger(retryAfter) && retryAfter > 0 && tail.endsWith('}')) {
    totals.refused++;
    await sleep(Math.max(0, Math.min(retryAfter * 1000, deadline - performance.now())));
    return;
  }
  fail(`${response.statusCode} with Retry-After ${String(response.headers['retry-after'])}, ending ${JSON.stringify(tail)}`);
}

process.stdout.write('flooding\n');
await Promise.all(
  Array.from({ length: Number(clientsText) }, async () => {
    const client = new Client(origin, { headersTimeout: 300_000, bodyTimeout: 300_000 });
    try {
      while (performance.now() < deadline) {
        await one(client).catch(async (error: unknown) => {
          fail(String(error));
          await sleep(100);
        });
      }
    } finally {
      await client.close();
    }
  }),
);
process.stdout.write(`${JSON.stringify(totals)}\n`);
