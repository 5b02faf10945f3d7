// Call frames and state changes recorded at import (recorder.ts), stored per block (codec.ts,
// changes.ts) and replayed into the tracers (replay.ts): traces without re-execution.
export { BlockFrameRecorder, FrameRecorder } from './recorder.js';
export type { RecordedBlock } from './recorder.js';
export { FRAMES_VERSION, bloomMayHold, bloomProbe, frameBloom, txFramesMayHold } from './codec.js';
export type { ReceiptLogs } from './codec.js';
export { replayRecorded, replayable } from './replay.js';
export { recordedTouches } from './changes.js';
export type { RecordedTxContext } from './replay.js';
