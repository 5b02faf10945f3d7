// A batch written to LevelDB in parts: for rows too many for one atomic batch (the first change
// set of a joined datadir's downloaded state is as large as the state), whose meaning comes from a
// meta row written last. Each part is a GroupBatch written once it passes `partBytes`; `beforeWrite`
// stages what belongs with the part (the latest rows of the keys it holds); `finish` writes the
// last part with the caller's final rows and waits for every part. A crash between parts leaves rows
// no reader uses (the final meta row is absent) and that the next attempt writes again.
import type { Db } from '../db.js';
import type { HistoryBatch } from '../history/index.js';
import { GroupBatch } from './group-batch.js';

export class PartedBatch implements HistoryBatch {
  private current: GroupBatch;
  private readonly written: Promise<void>[] = [];
  private failure: unknown;
  /** Parts handed to LevelDB so far (the last one included once finish() ran). */
  parts = 0;

  constructor(
    private readonly db: Db,
    private readonly partBytes: number,
    /** Stages into a part what goes with it, before it is written; `marker`: one put through the public API (see GroupBatch.putLast). */
    private readonly beforeWrite: (part: GroupBatch) => void,
    private readonly marker: [Uint8Array, Uint8Array],
  ) {
    this.current = new GroupBatch(db);
  }

  put(key: Uint8Array, value: Uint8Array): void {
    this.current.put(key, value);
    if (this.current.bytes >= this.partBytes) this.cut();
  }

  del(key: Uint8Array): void {
    this.current.del(key);
    if (this.current.bytes >= this.partBytes) this.cut();
  }

  /** Writes the part in progress (not awaited here: put() is synchronous; finish() waits for it). */
  private cut(): void {
    const part = this.current;
    this.current = new GroupBatch(this.db);
    this.beforeWrite(part);
    part.putLast(this.marker[0], this.marker[1]);
    this.parts++;
    this.written.push(this.write(part));
  }

  /** A part's write; a failure is kept for finish() (nothing waits on a part before it). */
  private write(part: GroupBatch): Promise<void> {
    return part.write().catch((err: unknown) => {
      this.failure ??= err;
    });
  }

  /**
   * The last part: `last` stages the final rows (their last put through putLast). It is written
   * only once every earlier part is durable (writes in flight together may land in any order, and
   * the last part's rows are what make the others count).
   */
  async finish(last: (part: GroupBatch) => void): Promise<void> {
    const part = this.current;
    this.beforeWrite(part);
    last(part);
    await Promise.all(this.written);
    if (this.failure !== undefined) {
      await part.close();
      throw this.failure;
    }
    this.parts++;
    await part.write();
  }
}
