// A counting semaphore with a FIFO queue: at most `count` holders at once, the others wait in
// arrival order. The rpc envelope answers batches through it (RpcConfig.maxConcurrentBatches);
// the upstream client bounds its calls in flight with it.

export class Lanes {
  private busy = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly count: number) {}

  /** Runs `work` in a lane, waiting for one if all are busy. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.busy >= this.count) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.busy++;
    try {
      return await work();
    } finally {
      this.leave();
    }
  }

  /**
   * From inside run(): gives the lane up while `work` waits on something that is not this
   * thread's work (a call on the offload executor), then takes a lane again.
   */
  async outside<T>(work: () => Promise<T>): Promise<T> {
    this.leave();
    try {
      return await work();
    } finally {
      if (this.busy >= this.count) await new Promise<void>((resolve) => this.waiting.push(resolve));
      else this.busy++;
    }
  }

  private leave(): void {
    const next = this.waiting.shift();
    if (next !== undefined)
      next(); // the lane passes straight to the next in line
    else this.busy--;
  }

  /** Callers waiting for a lane. */
  get queued(): number {
    return this.waiting.length;
  }
}
