/** The signals that stop the service: a supervisor's SIGTERM, a terminal's Ctrl-C. */
export const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const satisfies readonly NodeJS.Signals[];

/**
 * Under `npm start`, one Ctrl-C in a terminal reaches the service twice: the terminal signals the
 * whole foreground process group, and npm forwards its own copy to the script it runs (a
 * control-group stop by systemd does the same with SIGTERM). The same signal again within this
 * window is that copy, not a second request.
 */
export const REPEAT_WINDOW_MS = 1_000;

export interface StopSignalHandlers {
  /** The first stop signal: start the graceful shutdown. */
  stop(signal: NodeJS.Signals): void;
  /** A second one (another signal, or the same past the window): stop at once. */
  force(signal: NodeJS.Signals): void;
}

export function onStopSignals({ stop, force }: StopSignalHandlers): void {
  let first: { signal: NodeJS.Signals; at: number } | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    const now = performance.now();
    if (first === undefined) {
      first = { signal, at: now };
      stop(signal);
    } else if (signal !== first.signal || now - first.at >= REPEAT_WINDOW_MS) {
      force(signal);
    }
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
}
