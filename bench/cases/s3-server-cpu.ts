/**
 * The CPU of an S3 server that runs on this machine (the Ceph test server of
 * scripts/s3-test-server.sh, or another known one), beside the S3 case's downloads. On a machine of
 * two cores the relay through the service and its client take cores that such a store would
 * otherwise use; a store on other machines would not pay for them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fmt } from '../format.js';
import { median, type Metric } from '../results.js';
import { processCpuSeconds } from '../processes.js';

/** Process names of S3 servers, and of the daemons that store their bytes, that may run beside the bench. */
const S3_SERVER_PROCESSES = new Set(['radosgw', 'ceph-osd', 'ceph-mon', 'ceph-mgr', 'minio', 'weed', 'garage']);
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** The S3 server's processes when its endpoint is on this machine; none otherwise. */
export function localS3ServerPids(endpoint: string): number[] {
  if (!LOOPBACK.has(new URL(endpoint).hostname)) return [];
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (S3_SERVER_PROCESSES.has(readFileSync(`/proc/${entry}/comm`, 'utf8').trim())) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/** CPU seconds the processes have used so far. */
function cpuOf(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + (processCpuSeconds(pid) ?? 0), 0);
}

/** The cores the S3 server kept busy during each timed run of a variant; the median once done. */
export class S3ServerCores {
  readonly #runs: number[] = [];

  constructor(private readonly pids: readonly number[]) {}

  /** Runs `transfer`, recording the S3 server's cores meanwhile unless it is a warm-up. */
  async during<T>(warmup: boolean, transfer: () => Promise<T>): Promise<T> {
    const started = performance.now();
    const before = cpuOf(this.pids);
    const result = await transfer();
    if (!warmup) this.#runs.push((cpuOf(this.pids) - before) / ((performance.now() - started) / 1000));
    return result;
  }

  get median(): number {
    return median(this.#runs);
  }
}

/**
 * Where the CPU of a download through the service and of the direct one went: the S3 server's, the
 * relay's and the clients', per GiB, and whether together they filled the machine; then how the
 * service compares with a bare relay of the same object, which pays for the extra hop too.
 */
export function s3DownloadReason(
  relayed: { metric: Metric; store: number },
  direct: { metric: Metric; store: number },
  bare: { metric: Metric; store: number },
): string {
  const perGiB = (cores: number | undefined, metric: Metric) => fmt(((cores ?? NaN) * 1024) / metric.median, 2);
  const relay = relayed.metric;
  const busy = relayed.store + (relay.cores ?? 0) + (relay.clientCores ?? 0);
  const cores = availableParallelism();
  const facts =
    `Through the service, ${fmt(relay.median)} MiB/s: the S3 server used ${fmt(relayed.store, 2)} cores, the service ${fmt(relay.cores ?? NaN, 2)} ` +
    `and the bench's client ${fmt(relay.clientCores ?? NaN, 2)}. Directly, ${fmt(direct.metric.median)} MiB/s: the S3 server used ` +
    `${fmt(direct.store, 2)} cores and the SDK's client ${fmt(direct.metric.clientCores ?? NaN, 2)}. Per GiB, the S3 server spent ` +
    `${perGiB(relayed.store, relay)} s of CPU through the service and ${perGiB(direct.store, direct.metric)} s directly; the relay ` +
    `${perGiB(relay.cores, relay)} s and its client ${perGiB(relay.clientCores, relay)} s, against ${perGiB(direct.metric.clientCores, direct.metric)} s ` +
    'for the SDK’s client.';
  const directBusy = direct.store + (direct.metric.clientCores ?? 0);
  const inAll = ` In all, ${perGiB(busy, relay)} s of CPU per GiB through the service and ${perGiB(directBusy, direct.metric)} s directly.`;
  const machine =
    busy < 0.85 * cores
      ? ` Together they kept ${fmt(busy, 2)} of the machine's ${cores} cores busy: each of them waited on the others part of the time.${inAll}`
      : ` Together they kept ${fmt(busy, 2)} of the machine's ${cores} cores busy: the S3 server shares them with the relay and its ` +
        `client, so what these use comes out of what the store can; a store on other machines would not pay for it.${inAll}`;
  const ratio = relay.median / bare.metric.median;
  const hop =
    ` A bare relay of the same object (GetObject through the same client, piped into a node:http response) ran at ${fmt(bare.metric.median)} MiB/s, ` +
    `using ${fmt(bare.metric.cores ?? NaN, 2)} cores (${perGiB(bare.metric.cores, bare.metric)} s per GiB) while the S3 server used ${fmt(bare.store, 2)}: ` +
    `the service ran at ${fmt(ratio, 2)} of it, ` +
    (ratio >= 0.9 ? 'so what separates it from the direct transfer is the extra hop, which the bare relay pays as well.' : 'so the service adds work of its own to the hop.');
  return facts + machine + hop;
}
