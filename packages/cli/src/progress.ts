import cliProgress from 'cli-progress';
import { humanSize, line, type Io } from './output.js';

/** A bar of one transfer. */
export interface Bar {
  update(done: number): void;
  /** The transfer is over (its bar stays where it got to). */
  stop(): void;
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
  stop(): void;
}

const format = (payload: { name: string }, value: number, total: number) => ({ name: payload.name, done: humanSize(value), of: humanSize(total) });

export function progressFor(io: Io): Progress {
  if (!io.err.isTTY) {
    const none: Bar = { update: () => {}, stop: () => {} };
    return { bar: () => none, overall: () => none, result: (text) => line(io.out, text), problem: (text) => line(io.err, text), stop: () => {} };
  }
  const bars = new cliProgress.MultiBar(
    {
      stream: io.err,
      clearOnComplete: false,
      hideCursor: true,
      barsize: 24,
      fps: 10,
      format: (options, params, payload: { name: string }) => {
        const shown = format(payload, params.value, params.total);
        const bar = cliProgress.Format.BarFormat(params.progress, options);
        const percent = String(Math.floor(params.progress * 100)).padStart(3);
        const eta = params.eta > 0 && Number.isFinite(params.eta) && params.progress < 1 ? ` ${params.eta}s left` : '';
        return `${bar} ${percent}% ${shown.done.padStart(9)} of ${shown.of.padEnd(9)} ${payload.name}${eta}`;
      },
    },
    cliProgress.Presets.shades_classic,
  );
  const make = (name: string, total: number): Bar => {
    const bar = bars.create(Math.max(total, 1), 0, { name });
    return {
      update: (done) => bar.update(Math.min(done, Math.max(total, 1))),
      stop: () => bar.stop(),
    };
  };
  const above = (text: string) => bars.log(`${text}\n`);
  return {
    bar: make,
    overall: (total) => make('(all files)', total),
    result: (text) => (io.out.isTTY ? above(text) : line(io.out, text)),
    problem: above,
    stop: () => {
      // Renders what is left to log, then the bars as they end.
      bars.update();
      bars.stop();
    },
  };
}
