// Where the state history's rows go: the writer's group batch (puts, or deletes of the same keys on a
// rewind). Its own file so the change-set writer (write.ts) and the latest rows (latest.ts), which
// both stage into it, do not import each other.

export interface HistoryBatch {
  put(key: Uint8Array, value: Uint8Array): unknown;
  del(key: Uint8Array): unknown;
}
