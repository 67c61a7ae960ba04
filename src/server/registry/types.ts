import type { ClientInputs } from '../../runtime/run-handle.ts';
import type { RunRecovery } from '../../contract/agent-spec.ts';
import type { AgentEvent } from '../../contract/event.ts';
import type { Message } from '../../contract/message.ts';
import type { AgentRunResult } from '../../contract/run-result.ts';
import type { AgentRuntime } from '../../runtime/agent-runtime.ts';
import type { ClusterBus } from '../../runtime/cluster-bus.ts';
import type { Logger } from '../log.ts';
import type { LeaseOptions } from '../run-leases.ts';

// The registry's public vocabulary, shared by its parts and re-exported by `RunRegistry`.

export type ConcurrencyPolicy = 'reject' | 'supersede';

export interface RegistryOptions {
  readonly policy?: ConcurrencyPolicy;
  /** Shares thread logs and run control with other instances on the same database. */
  readonly bus?: ClusterBus;
  /** Frames each thread keeps for reconnects (default 1024). */
  readonly replayBufferCapacity?: number;
  /** Bytes of serialised events each thread keeps for reconnects (default 1 MiB; the latest frame always). */
  readonly replayBufferBytes?: number;
  /** Thread logs kept in memory (default 10,000); the oldest idle ones go first. */
  readonly maxThreadLogs?: number;
  /** Bytes all thread logs' rings may hold together (default 32 MiB); past it the oldest idle logs go first. */
  readonly maxReplayBytes?: number;
  /** Thread leases: this instance's name, their length, how often expired ones are swept (`startLeases`). */
  readonly leases?: LeaseOptions;
  /** Bytes a stream's client may leave unread before it is dropped (default 1 MiB; `logStream`). */
  readonly maxFollowerBytes?: number;
  /** How long a client may stay above `maxFollowerBytes` before it is dropped (default 2 s). */
  readonly followerGraceMs?: number;
  /** Frames a thread log may hand out beyond its stored `seq` mark before the mark is raised again (default 1024). */
  readonly seqBlock?: number;
  /** Where each run's start and end, its errors, and bus failures are told (default: nowhere). */
  readonly logger?: Logger;
  /** Told when a run ends and when a stream closes: the moments a server may go quiet (`IdleCollector`). */
  readonly onQuiet?: () => void;
  /** Sees every run this registry starts, and may wrap how it starts (`awaken serve --record` writes a transcript of each). */
  readonly observer?: RunObserver;
  /**
   * The version of the app's code serving the agents now (`LoadedApp.version`), read at each start:
   * part of the digest a run records of its agent (`RunRecord.agent_digest`).
   */
  readonly codeVersion?: () => string | undefined;
  /**
   * Runs of expired leases (their instance died) that are `running` in the store: taken up here
   * when the run's agent (`AgentSpec.recovery`), else `recovery`, says `resume`, and the agent is
   * still served and still what the run started with; else ended `interrupted: ...` with the reason.
   * Without it, every such run is ended interrupted (`awaken serve` and `createAwaken` give theirs:
   * `resume` unless told otherwise).
   */
  readonly recovery?: RunRecovery;
}

/** Where a run's frames go as it emits them. */
export type RunSink = { emit(event: AgentEvent): void | Promise<void> };

/** How the registry starts a run: the runtime's `start`, with the sink its frames go to. */
export type RunStarter = (sink: RunSink) => ReturnType<AgentRuntime['start']>;

/**
 * Sees each new run as it starts, and each parked run taken up again from the store (`resumed`: after
 * a reload or a restart, `start` revives it and it emits nothing before a decision): it calls `start`
 * itself, and may wrap the sink and the handle it returns.
 */
export interface RunObserver {
  /** `owner`: the principal the thread belongs to as the run starts (absent: none does). */
  observe(
    run: {
      readonly threadId: string;
      readonly runId: string;
      readonly agentId: string;
      readonly messages: readonly Message[];
      readonly owner?: string;
      readonly resumed?: boolean;
      /** With `resumed`: a run its process left running, recovered from its last durable point (`start` recovers it and it goes on at once). */
      readonly recovered?: boolean;
    } & ClientInputs /* what the client brought besides messages: a recorder keeps it, a replay gives it back */,
    start: RunStarter,
    sink: Parameters<RunStarter>[0],
  ): ReturnType<RunStarter>;
}

/**
 * Sees every frame of this instance's runs as it is recorded (`watch`): the operating surface counts
 * runs, tokens and tool calls from them. `at`: the registry's clock then; `startedAt`: when this
 * instance took the run up (its start, or its revival).
 */
export type RunWatcher = (
  run: { readonly runId: string; readonly threadId: string; readonly agentId: string; readonly startedAt: number },
  event: AgentEvent,
  at: number,
) => void;

/** Why the registry refused to start or steer a run. */
export type RegistryError =
  | { readonly code: 'thread_busy'; readonly message: string; readonly runId: string }
  | { readonly code: 'thread_paused'; readonly message: string; readonly runId: string }
  | { readonly code: 'run_not_found'; readonly message: string }
  | { readonly code: 'thread_not_found'; readonly message: string }
  | { readonly code: 'not_waiting'; readonly message: string }
  | { readonly code: 'target_not_found'; readonly message: string }
  | { readonly code: 'start_failed'; readonly message: string }
  | { readonly code: 'shutting_down'; readonly message: string };

export type RegistryResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: RegistryError };

export const fail = <T>(error: RegistryError): RegistryResult<T> => ({ ok: false, error });

/** A run to start, with what its client brought besides messages (`RunRequest`'s). */
export interface StartRequest extends ClientInputs {
  readonly threadId: string;
  readonly agentId?: string;
  readonly messages: readonly Message[];
  /** Start even when the thread is paused on a suspension: the parked run is cancelled first. */
  readonly discardPause?: boolean;
  /** Answer again from this stored message (`RunRequest.rewindTo`). */
  readonly rewindTo?: string;
}

export interface StartedRun {
  readonly runId: string;
  readonly threadId: string;
  /** The sequence number of the thread log before the run's first frame. */
  readonly fromSeq: number;
  readonly done: Promise<AgentRunResult | undefined>;
}
