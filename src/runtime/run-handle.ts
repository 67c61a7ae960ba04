import { RunSignal } from './run-signal.ts';
import type { RunTap } from './tap.ts';
import type { JsonValue } from '../contract/json.ts';
import type { ToolDescriptor } from '../contract/tool.ts';
import type { CheckpointFence } from './thread-run-store.ts';
import type { Decision } from '../contract/decision.ts';
import type { RuntimeError } from '../contract/errors.ts';
import type { InferenceOverride } from '../contract/inference.ts';
import type { Message } from '../contract/message.ts';
import { unreachable } from '../contract/never.ts';
import { err, ok, type Result } from '../contract/result.ts';
import type { AgentRunResult } from '../contract/run-result.ts';
import { DecisionChannel } from './decision-channel.ts';
import type { Env } from './env.ts';
import type { RunLoop } from './run-loop.ts';
import type { ToolBatch } from './tool-batch.ts';

/** What to run (book: RunRequest). */
export interface RunRequest extends ClientInputs {
  readonly threadId?: string;
  readonly agentId?: string;
  readonly messages: readonly Message[];
  readonly overrides?: InferenceOverride;
  /**
   * Answer again from this stored message: the thread's messages after it are left out of the run's
   * history and replaced in the store by what the run adds (a regenerated answer). Ignored when the
   * thread does not hold the id.
   */
  readonly rewindTo?: string;
  /** The run's id when the caller chose it (a server takes the thread's lease for it first); else a new one. */
  readonly runId?: string;
}

/** What a client brings a run besides its messages. */
export interface ClientInputs {
  /**
   * Tools the client runs (AG-UI `RunAgentInput.tools`): offered to the model after the agent's own;
   * a call to one parks the run until the client sends its result (`clientTool`). A name one of the
   * agent's tools has is refused (`resolve_failed`).
   */
  readonly clientTools?: readonly ToolDescriptor[];
  /**
   * The client's state (AG-UI `state`): the run's initial value of each key it names, set over the
   * thread's state. Only keys the agent declares client-writable (`AgentSpec.client_state`) are set;
   * a server refuses a request that writes any other (`clientStateProblem`).
   */
  readonly clientState?: { readonly [key: string]: JsonValue };
  /** What the client says of its page (AG-UI `context`): offered to the model with each inference of the run. */
  readonly clientContext?: readonly ClientContext[];
}

/** The client inputs `r` has, each only when given (what a run request or a recorder passes on). */
export const clientInputs = (r: ClientInputs): ClientInputs => ({
  ...(r.clientTools !== undefined ? { clientTools: r.clientTools } : {}),
  ...(r.clientState !== undefined ? { clientState: r.clientState } : {}),
  ...(r.clientContext !== undefined ? { clientContext: r.clientContext } : {}),
});

/** One entry of a client's context (AG-UI `Context`). */
export interface ClientContext {
  readonly description: string;
  readonly value: string;
}

/** Which run `AgentRuntime.revive` takes up from the store. */
export interface ReviveRequest {
  readonly threadId: string;
  readonly runId: string;
  readonly agentId?: string;
}

export interface RunOptions {
  readonly signal?: AbortSignal;
  /**
   * On a suspension, keep the run parked until decisions arrive (`decide`) or it is cancelled
   * (default), or return at once with termination `suspended`.
   */
  readonly waitForDecisions?: boolean;
  /** What every checkpoint of the run carries to its store (a server's runs: the thread's lease, the agent's digest). */
  readonly checkpoint?: CheckpointStamp;
  /** A tap of the caller's own on this run, told beside its plugins' taps (`RuntimePlugin.tap`). */
  readonly tap?: RunTap;
}

/** What a server stamps on each checkpoint of a run it holds (`RunCheckpoint.fence`, `RunCheckpoint.agentDigest`). */
export interface CheckpointStamp {
  readonly fence?: CheckpointFence;
  readonly agentDigest?: string;
}

/** Where and how deep a run runs, when the runtime starts it as a sub-run. */
export interface SubRun {
  readonly env?: Env;
  readonly parentRunId?: string;
  readonly depth?: number;
}

/** A started run: its ids, its decision and cancel controls, and its final result. */
export interface RunHandle {
  readonly threadId: string;
  readonly runId: string;
  /**
   * Decisions for the parked run; `messages` (new input sent with them) join the thread after the
   * results of the calls they settle, before the next inference.
   */
  decide(decisions: readonly Decision[], messages?: readonly Message[]): Result<void, RuntimeError>;
  /**
   * Resolves `true` once the run is parked waiting for decisions (at once if it is), `false` if it
   * ends first. A decision sent after `true` is accepted (its target permitting). Decisions sent and
   * not taken yet wake the run, so until it has taken them and parks again it is not parked: after
   * a `decide` that leaves calls waiting, `parked()` resolves once the run waits for the rest.
   */
  parked(): Promise<boolean>;
  /** The calls the parked run waits on, in model order (none unless it is parked). */
  waitingOn(): readonly SuspendedCall[];
  /**
   * Lets a parked run go without deciding or cancelling it (a server shutting down): `done` resolves
   * with termination `suspended`, nothing more is emitted or stored, and the run stays waiting in the
   * store for `AgentRuntime.revive`. False (nothing done) when the run is not parked.
   */
  detach(): boolean;
  cancel(): void;
  /**
   * The thread's messages as the run holds them: the history, the input and what the run added. Once
   * `done` has resolved, what a store keeps for the thread (empty until the run has started).
   */
  messages(): readonly Message[];
  /**
   * Whether the run was fenced off: its store refused a checkpoint because another instance took the
   * run over (`RunCheckpoint.fence`). It goes on there; nothing of it was emitted here since, not even
   * its end, and the thread's lease is the other instance's.
   */
  fenced?(): boolean;
  readonly done: Promise<AgentRunResult>;
}

/** A call a parked run waits on, and the ticket it suspended with. */
export type SuspendedCall = ReturnType<ToolBatch['suspendedCalls']>[number];

/**
 * The live side of a run: its own cancellation, the decisions it waits on, the batch it is
 * parked on and its loop. Its handle is made once the run's `done` exists (`handle`).
 */
export class RunControls {
  readonly threadId: string;
  readonly runId: string;
  readonly cancellation = new RunSignal();
  readonly channel = new DecisionChannel(this.cancellation);
  /** The batch the run is suspended on: decisions are checked against it. */
  suspended: ToolBatch | undefined;
  /** The run's loop, once made (its messages, and a read to wake on abort). */
  loop: RunLoop | undefined;

  constructor(threadId: string, runId: string) {
    this.threadId = threadId;
    this.runId = runId;
  }

  /** The run's one listener on its signal: a run waiting for decisions, or on a provider, wakes. */
  readonly onAbort = (): void => {
    this.channel.aborted();
    this.loop?.aborted();
  };

  decide(decisions: readonly Decision[], messages: readonly Message[] = []): Result<void, RuntimeError> {
    const batch = this.suspended;
    if (batch === undefined) return err({ code: 'resolve_failed', message: `run ${this.runId} is not waiting for a decision` });
    for (const d of decisions) {
      if (batch.targetOf(d.targetId) === undefined) return err({ code: 'resolve_failed', message: `no suspended tool call or suspension '${d.targetId}'` });
    }
    this.channel.push(decisions, messages);
    return ok(undefined);
  }

  detach(): boolean {
    if (this.suspended === undefined) return false;
    this.channel.detach();
    return true;
  }

  /** The run's handle, resolving with `done`. */
  handle(done: Promise<AgentRunResult>): RunHandle {
    return {
      threadId: this.threadId,
      runId: this.runId,
      decide: (decisions, messages) => this.decide(decisions, messages),
      parked: () => this.channel.parked(),
      waitingOn: () => this.suspended?.suspendedCalls() ?? [],
      detach: () => this.detach(),
      cancel: () => this.cancellation.abort(),
      messages: () => [...(this.loop?.messages() ?? [])],
      fenced: () => this.loop?.fenced === true,
      done,
    };
  }
}

/** A runtime error in one line, for a message that carries it on (a sub-run that failed). */
export function describeRuntimeError(e: RuntimeError): string {
  switch (e.code) {
    case 'state':
      return `state: ${e.error.code}`;
    case 'thread_already_running':
      return `thread ${e.threadId} already has a run`;
    case 'agent_not_found':
      return `agent '${e.agentId}' not found`;
    case 'resolve_failed':
      return e.message;
    default:
      return unreachable(e, 'runtime error');
  }
}
