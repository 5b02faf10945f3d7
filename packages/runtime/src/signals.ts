// SIGTERM and SIGINT for `serve`, from the first moment the process runs: the launcher
// (bin/node-cli.js) records a signal that arrives while the modules load, and StopSignals takes
// over from it before anything is opened. So a signal at any moment of startup (a load balancer or
// a scheduler stopping a replica that just came up) is handled like one while serving: startup
// finishes, then the process drains, closes its stores and ledger and exits 0, never by the
// signal's default action. A second signal exits at once (code 1).

/** Where the launcher leaves the signals it recorded before the runtime took over. */
export const EARLY_SIGNALS = Symbol.for('chainnode.early-signals');

interface EarlySignals {
  /** Signals received so far, in order. */
  received: NodeJS.Signals[];
  /** The launcher's listener, removed once StopSignals listens. */
  listener: (signal: NodeJS.Signals) => void;
}

const STOP_SIGNALS: NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

export class StopSignals {
  private signal: NodeJS.Signals | undefined;
  private readonly waiters: ((signal: NodeJS.Signals) => void)[] = [];
  private started = false;

  constructor(private readonly log: (line: string) => void) {
    for (const s of STOP_SIGNALS) process.on(s, this.onSignal);
    const early = (process as unknown as Record<symbol, EarlySignals | undefined>)[EARLY_SIGNALS];
    if (early !== undefined) {
      for (const s of STOP_SIGNALS) process.off(s, early.listener);
      delete (process as unknown as Record<symbol, unknown>)[EARLY_SIGNALS];
      for (const s of early.received) this.onSignal(s);
    }
  }

  /** The first signal received, if any. */
  get received(): NodeJS.Signals | undefined {
    return this.signal;
  }

  /** Startup is over: a signal from now on stops a running server (before: once it has started). */
  markStarted(): void {
    this.started = true;
  }

  /** Resolves with the first signal (at once if one came already). */
  next(): Promise<NodeJS.Signals> {
    const s = this.signal;
    if (s !== undefined) return Promise.resolve(s);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private readonly onSignal = (signal: NodeJS.Signals): void => {
    if (this.signal !== undefined) {
      this.log(`${signal} again, exiting now`);
      process.exit(1);
    }
    this.signal = signal;
    this.log(
      this.started
        ? `${signal}: finishing in-flight requests, then closing the store`
        : `${signal} during startup: stopping as soon as everything opened is open`,
    );
    for (const w of this.waiters.splice(0)) w(signal);
  };
}
