import type { Decision } from '../contract/decision.ts';

/** One frame of a thread's event log, as instances share it. */
export interface SharedFrame {
  readonly seq: number;
  readonly runId: string;
  /** The serialised `AgentEvent`. */
  readonly data: string;
}

/** Whether a bus receives notifications. */
export type BusStatus = 'listening' | 'down';

/** A command for the instance that owns a run. */
export type ControlCommand =
  | { readonly action: 'cancel'; readonly runId: string }
  | { readonly action: 'decide'; readonly runId: string; readonly decisions: readonly Decision[] };

/**
 * What several server instances on one database share (the port; PostgreSQL implements it): every
 * thread's event log with its `seq`, a notification when a thread's log grows, and control commands
 * (cancel, decide) addressed to whichever instance runs the run.
 */
export interface ClusterBus {
  /**
   * Appends frames (consecutive `seq`s) and notifies the other instances. A frame of a run whose final
   * terminal frame (a `run_finish` that is not a suspension) is already in the log is dropped: the run
   * was ended, by another instance if this one was cut off past its lease.
   */
  append(threadId: string, frames: readonly SharedFrame[]): Promise<void>;
  /**
   * Appends one frame after the thread's last (its `seq` chosen in the same atomic step, so no frame
   * appended meanwhile takes it), with the same rule; returns its `seq`, or 0 when it was dropped.
   * What an instance appends for a run that is not its own (the terminal frame of a swept run).
   */
  appendNext(threadId: string, frame: Omit<SharedFrame, 'seq'>): Promise<number>;
  /** Frames after `afterSeq`, in order, at most `limit`. */
  read(threadId: string, afterSeq: number, limit: number): Promise<SharedFrame[]>;
  /** The highest `seq` of a thread (0 when it has none). */
  lastSeq(threadId: string): Promise<number>;
  /**
   * Drops a deleted thread's frames: its id may name someone else's thread next, whose followers
   * must replay nothing of this one.
   */
  forget(threadId: string): Promise<void>;
  send(command: ControlCommand): Promise<void>;
  /**
   * Starts listening; `onAppend` learns which thread grew, `onCommand` gets every command. The first
   * connection must succeed; a lost one is re-established with back-off, and `onStatus` tells each
   * change (`down` with its cause; `listening` again, after which appends missed meanwhile must be
   * caught up from the shared log).
   */
  listen(
    onAppend: (threadId: string) => void,
    onCommand: (command: ControlCommand) => void,
    onStatus?: (status: BusStatus, cause?: unknown) => void,
  ): Promise<void>;
  /** Whether notifications arrive now (`down` while the listening connection is being re-established). */
  readonly status: BusStatus;
  close(): Promise<void>;
}
