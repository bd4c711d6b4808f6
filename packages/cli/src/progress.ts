import cliProgress from 'cli-progress';
import { humanSize, line, type Io } from './output.js';

/** A bar of one transfer. */
export interface Bar {
  update(done: number): void;
  /** The transfer is over: its bar goes (a line tells its result). */
  stop(): void;
  /** It failed: its bar says so. */
  fail(): void;
  /** The whole changed (a file of several failed). */
  setTotal(total: number): void;
}

/** Progress bars on stderr when it is a terminal; nothing at all otherwise (pipes and logs get the results only). */
export interface Progress {
  bar(name: string, total: number): Bar;
  /** The bar of the whole, when there are several transfers. */
  overall(total: number): Bar;
  /**
   * Tells a result: above the bars when they are on the terminal that stdout also writes to (a
   * line written beside them would break their redrawing), else on stdout.
   */
  result(text: string): void;
  /** Tells a problem: above the bars, or on stderr. */
  problem(text: string): void;
  /** Tells how the transfers go, beside the bars (nothing when they are not shown). */
  note(text: string): void;
  stop(): void;
}

interface Payload {
  name: string;
  /** The real total (the bar's own is at least 1, so that an empty file can be full). */
  total: number;
}

export function progressFor(io: Io): Progress {
  if (!io.err.isTTY) {
    const none: Bar = { update: () => {}, stop: () => {}, fail: () => {}, setTotal: () => {} };
    return { bar: () => none, overall: () => none, result: (text) => line(io.out, text), problem: (text) => line(io.err, text), note: () => {}, stop: () => {} };
  }
  const bars = new cliProgress.MultiBar(
    {
      stream: io.err,
      // The bars go when the command ends: the result lines stay.
      clearOnComplete: true,
      hideCursor: true,
      barsize: 24,
      fps: 10,
      format: (options, params, payload: Payload) => {
        const shown = { done: humanSize(Math.min(params.value, payload.total)), of: humanSize(payload.total) };
        const bar = cliProgress.Format.BarFormat(params.progress, options);
        const percent = String(Math.floor(params.progress * 100)).padStart(3);
        // An estimate only once it means something: not at the start, nor for a bar that stalled.
        const eta = params.eta > 0 && params.eta < 24 * 3600 && params.value > 0 && params.progress < 1 ? ` ${params.eta}s left` : '';
        return `${bar} ${percent}% ${shown.done.padStart(9)} of ${shown.of.padEnd(9)} ${payload.name}${eta}`;
      },
    },
    cliProgress.Presets.shades_classic,
  );
  const make = (name: string, total: number): Bar => {
    let whole = Math.max(total, 1);
    const payload: Payload = { name, total };
    const bar = bars.create(whole, 0, payload);
    return {
      update: (done) => bar.update(Math.min(done, whole)),
      stop: () => bars.remove(bar),
      fail: () => bar.update({ ...payload, name: `${name} (failed)` }),
      setTotal: (next) => {
        whole = Math.max(next, 1);
        payload.total = next;
        bar.setTotal(whole);
      },
    };
  };
  // Lines logged above the bars are written at their next redraw; those still waiting when the
  // bars stop are written after them (a redraw at the very end would leave the cursor on a bar).
  let waiting: Array<{ text: string; stream: NodeJS.WritableStream }> = [];
  bars.on('redraw-pre', () => (waiting = []));
  const above = (stream: NodeJS.WritableStream) => (text: string) => {
    waiting.push({ text, stream });
    bars.log(`${text}\n`);
  };
  return {
    bar: make,
    overall: (total) => make('(all files)', total),
    result: (text) => (io.out.isTTY ? above(io.out)(text) : line(io.out, text)),
    problem: above(io.err),
    note: above(io.err),
    stop: () => {
      bars.stop();
      for (const { text, stream } of waiting) line(stream, text);
      waiting = [];
    },
  };
}
