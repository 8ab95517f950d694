// What starts and feeds the workflows: their inputs and the payload of the `children` signal. The
// domain's types are src/domain's.

import type { AlbumKey, AlbumProfile, AlbumTimings, ChildArrival, JsonValue, MessageKey } from '../src/domain/types.js';

/** The payload of the `children` signal: every pending child of one album the dispatcher found. */
export interface ChildrenBatch {
  children: ChildArrival[];
}

/** Arguments of `albumWorkflow` (one object, as Temporal recommends). */
export interface AlbumWorkflowInput {
  key: AlbumKey;
  timings: AlbumTimings;
  profile: AlbumProfile;
  /** State carried across continue-as-new; absent on a fresh start. Shape owned by the workflow. */
  carried?: JsonValue;
  /** Testing: continue-as-new after this many signals, so that path runs in tests. */
  continueAsNewAfterSignals?: number;
}

/** Arguments of `messageWorkflow`, the workflow of one standalone (album-less) message. */
export interface MessageWorkflowInput {
  key: MessageKey;
  timings: AlbumTimings;
}
