import { z } from 'zod';
import type { AgentSpec } from '../contract/agent-spec.ts';
import type { ToolError } from '../contract/errors.ts';
import type { JsonValue } from '../contract/json.ts';
import type { SuspendTicket, ToolCallResume, ToolCallResumeMode, ToolDescriptor, ToolResult } from '../contract/tool.ts';
import type { ToolRecoveryCapability } from '../contract/tool-recovery.ts';
import type { Snapshot } from '../core/state/snapshot.ts';
import type { StateCommand } from '../core/state/state-command.ts';
import type { StateKey } from '../core/state/state-key.ts';
import { describeToolError } from './errors.ts';

/** A tool's answer: the result the model sees, and optional state writes staged with it. */
export interface ToolOutput {
  readonly result: ToolResult;
  readonly command?: StateCommand;
}

/** Thrown by `validateArgs` or `execute` to end the call as failed (book: ToolError). */
export class ToolFailure extends Error {
  readonly error: ToolError;
  constructor(error: ToolError) {
    super(describeToolError(error));
    this.name = 'ToolFailure';
    this.error = error;
  }
}

/**
 * Thrown by `execute` when the tool can prove the call never left (its service refused the
 * connection, a pool had no slot): nothing happened outside, so the runtime tries the call again,
 * up to the `max_attempts` of the tool's recovery policy, and ends it as failed after that.
 */
export class UnavailableBeforeDispatch extends ToolFailure {
  constructor(message: string) {
    super({ code: 'unavailable_before_dispatch', message });
    this.name = 'UnavailableBeforeDispatch';
  }
}

/** Whether a tool's failure proves the call never left (a replayed run's failure is a plain `ToolFailure` with the same code). */
export const isUnavailableBeforeDispatch = (e: unknown): e is ToolFailure => e instanceof ToolFailure && e.error.code === 'unavailable_before_dispatch';

export type ProgressStatus = 'pending' | 'running' | 'done' | 'failed';

/** The decision a resumed call runs under. */
export interface ResumeContext {
  readonly decision: ToolCallResume;
  readonly mode: ToolCallResumeMode;
  /** The ticket the call suspended with: the tool's own, or its gate's (a permission ask). */
  readonly ticket?: SuspendTicket;
}

/** Read-only context of one tool call (book: Tool Trait → ToolCallContext). */
export interface ToolCallContext {
  readonly callId: string;
  readonly toolName: string;
  readonly threadId: string;
  readonly runId: string;
  readonly agentSpec: AgentSpec;
  readonly snapshot: Snapshot;
  readonly signal: AbortSignal;
  readonly resume?: ResumeContext;
  state<V>(key: StateKey<V, unknown>): V | undefined;
  /** `activity_snapshot {message_id: call id, replace: true}`. */
  reportActivity(activityType: string, content: JsonValue): Promise<void>;
  /** `activity_delta`; a non-array patch is wrapped in an array. */
  reportActivityDelta(activityType: string, patch: JsonValue): Promise<void>;
  /** `activity_snapshot` of type `tool-call-progress`. */
  reportProgress(status: ProgressStatus, message?: string, progress?: number): Promise<void>;
  /** `tool_call_stream_delta`: a piece of the tool's output as it is produced. */
  streamOutput(delta: string): Promise<void>;
}

/**
 * The tool port (book: Tool Trait). `execute` returns a `ToolResult` (or a `ToolOutput` with a
 * state command); `ToolResult.error` goes back to the model, a thrown `ToolFailure` ends the call.
 */
/**
 * Where a tool's calls run (seed 003): beside the runtime (`brain`, the default) or in the sandbox.
 * Set by whoever registers the tool, never by the model or the request.
 */
export type ToolExecutionTarget = 'brain' | 'sandbox';

export interface Tool {
  readonly descriptor: ToolDescriptor;
  readonly target?: ToolExecutionTarget;
  /**
   * What may be done with a call of this tool that was dispatched when its run's process died:
   * `non_recoverable` when absent (its outcome is unknown, it is never run again). Only a tool can
   * say so of itself; an agent's `tool_execution.recovery` may choose a mode up to it.
   */
  readonly recovery?: ToolRecoveryCapability;
  /**
   * The activity types a call of this tool reports (`ctx.reportActivity`), for a server telling a
   * client what an agent draws: CopilotKit's `/info` lists the agents offered a tool that reports
   * `a2ui-surface` (A2UI v0.9), and its page renders those surfaces only from them.
   */
  readonly activityTypes?: readonly string[];
  validateArgs?(args: JsonValue): void;
  /**
   * The approval a first run of a call must get before it runs, asked at the batch's gate (where a
   * plugin's `Suspend` intercept is): the ticket to suspend the call with, or undefined to let it
   * run. Asked only when the plugins allowed the call: a call a plugin suspended resumes on that
   * plugin's question, and a resumed call is not asked again. A throw fails the call with its
   * message. The AI SDK's `needsApproval` is this.
   */
  askBefore?(args: JsonValue, call: { readonly id: string; readonly name: string }): SuspendTicket | undefined | PromiseLike<SuspendTicket | undefined>;
  execute(args: JsonValue, ctx: ToolCallContext): ToolResult | ToolOutput | Promise<ToolResult | ToolOutput>;
  /**
   * The tool as an agent is offered it, when what it is depends on the agent's config (its
   * descriptor too: a plugin registers its tools once, before any agent is known). Same id and
   * name; asked once per resolution of an agent, so it should hand back the same object for the
   * same spec.
   */
  forAgent?(spec: AgentSpec): Tool;
}

export const isToolOutput = (x: ToolResult | ToolOutput): x is ToolOutput => 'result' in x && !('tool_name' in x);

/**
 * A tool whose arguments are a zod schema: the descriptor's `parameters` is its JSON Schema and
 * `validateArgs` parses with it (failure → `invalid_arguments` naming the fields).
 */
export function defineTool<A extends z.ZodType>(def: {
  readonly id: string;
  readonly name?: string;
  readonly description: string;
  readonly args: A;
  readonly category?: string;
  readonly recovery?: ToolRecoveryCapability;
  /** The activity types its calls report (`Tool.activityTypes`). */
  readonly activityTypes?: readonly string[];
  readonly execute: (args: z.output<A>, ctx: ToolCallContext) => ToolResult | ToolOutput | Promise<ToolResult | ToolOutput>;
}): Tool {
  const parameters = z.toJSONSchema(def.args, { unrepresentable: 'any' }) as JsonValue;
  const parse = (args: JsonValue): z.output<A> => {
    const r = def.args.safeParse(args);
    if (r.success) return r.data;
    const message = r.error.issues.map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new ToolFailure({ code: 'invalid_arguments', message });
  };
  return {
    descriptor: {
      id: def.id,
      name: def.name ?? def.id,
      description: def.description,
      parameters,
      ...(def.category !== undefined ? { category: def.category } : {}),
    },
    ...(def.recovery !== undefined ? { recovery: def.recovery } : {}),
    ...(def.activityTypes !== undefined ? { activityTypes: def.activityTypes } : {}),
    validateArgs: (args) => void parse(args),
    execute: (args, ctx) => def.execute(parse(args), ctx),
  };
}
