import type { AgentSpec } from '../contract/agent-spec.ts';
import type { JsonValue } from '../contract/json.ts';
import type { Snapshot } from '../core/state/snapshot.ts';
import type { StateKey } from '../core/state/state-key.ts';
import type { ProgressStatus, ResumeContext, ToolCallContext } from '../runtime/tool.ts';

/** Where an observed context keeps the call's own and what was reported: symbols, as `CANCELLATION` is kept (see there). */
const CALL: unique symbol = Symbol('awaken.observed-call');
const REPORTED: unique symbol = Symbol('awaken.observed-activity');

/**
 * A call's context as its tool sees it while it is recorded: the call's own, with what the tool
 * reports noted as it goes. A class of its own rather than `Object.create(ctx)`: V8 gives an object
 * that becomes a prototype a map of its own, which cost each recorded call about 5 µs. What it
 * keeps it keeps under symbols, not `#private` fields, so that a tool that wraps its context
 * (`Object.create`, a `Proxy`) reads every field through the wrapper as it does unrecorded.
 */
export class ObservedContext implements ToolCallContext {
  readonly [CALL]: ToolCallContext;
  readonly [REPORTED]: { method: string; args: JsonValue[] }[] = [];
  readonly resume?: ResumeContext;

  constructor(ctx: ToolCallContext) {
    this[CALL] = ctx;
    if (ctx.resume !== undefined) this.resume = ctx.resume;
  }

  /** What the tool reported, in order (its record's `activity`). */
  static activityOf(ctx: ObservedContext): { method: string; args: JsonValue[] }[] {
    return ctx[REPORTED];
  }

  get callId(): string {
    return this[CALL].callId;
  }

  get toolName(): string {
    return this[CALL].toolName;
  }

  get threadId(): string {
    return this[CALL].threadId;
  }

  get runId(): string {
    return this[CALL].runId;
  }

  get agentSpec(): AgentSpec {
    return this[CALL].agentSpec;
  }

  get snapshot(): Snapshot {
    return this[CALL].snapshot;
  }

  get signal(): AbortSignal {
    return this[CALL].signal;
  }

  state<V>(key: StateKey<V, unknown>): V | undefined {
    return this[CALL].state(key);
  }

  reportActivity(activityType: string, content: JsonValue): Promise<void> {
    this[REPORTED].push({ method: 'activity', args: [activityType, content] });
    return this[CALL].reportActivity(activityType, content);
  }

  reportActivityDelta(activityType: string, patch: JsonValue): Promise<void> {
    this[REPORTED].push({ method: 'activity_delta', args: [activityType, patch] });
    return this[CALL].reportActivityDelta(activityType, patch);
  }

  reportProgress(status: ProgressStatus, message?: string, progress?: number): Promise<void> {
    this[REPORTED].push({ method: 'progress', args: [status, message ?? null, progress ?? null] });
    return this[CALL].reportProgress(status, message, progress);
  }

  streamOutput(delta: string): Promise<void> {
    this[REPORTED].push({ method: 'stream_output', args: [delta] });
    return this[CALL].streamOutput(delta);
  }
}
