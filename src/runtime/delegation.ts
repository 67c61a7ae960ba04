import { z } from 'zod';
import { definePluginConfigKey, type AgentSpec, type RemoteEndpoint } from '../contract/agent-spec.ts';
import type { AgentEvent } from '../contract/event.ts';
import type { JsonValue } from '../contract/json.ts';
import type { TerminationReason } from '../contract/lifecycle.ts';
import type { Suspension, SuspendTicket, ToolCallResume, ToolResult } from '../contract/tool.ts';
import type { Env } from './env.ts';
import { ToolFailure, type ProgressStatus, type Tool, type ToolCallContext } from './tool.ts';
import { unreachable } from '../contract/never.ts';

/**
 * Delegation (book: 多智能体模式 → 通过 AgentSpec.delegates 进行 agent 委托; 远程 A2A agent): for each
 * id in an agent's `delegates`, the model is offered `agent_run_<id>`, a tool that runs that agent
 * on a prompt and answers with its final response. A local delegate runs on the same runtime, in a
 * child thread of its own with its own run id; a remote one (an agent with an `endpoint`) is a task
 * of another server, over A2A. To the model it is one tool call either way; to the stream, the
 * child's text arrives as the call's streamed output and its progress as an `agent-delegation`
 * activity of the call — never as the parent's own text. A child that suspends (a tool waiting for
 * approval, an A2A task asking for input) suspends the parent's call with the child's question; the
 * decision for it goes on to the child, which goes on from where it stopped (docs/delegation.md).
 */

export const DELEGATION_CATEGORY = 'delegation';
export const DELEGATION_ACTIVITY = 'agent-delegation';
export const delegateToolId = (agentId: string): string => `agent_run_${agentId}`;

/** The `delegation` section of a delegating agent: how deep and how wide its sub-runs may go. */
export const DelegationConfigSchema = z
  .object({
    /** Sub-runs below this agent's run may nest this deep (its own delegates are at depth 1). */
    max_depth: z.number().int().min(1).max(32).default(4),
    /** Sub-runs one run may have going at once. */
    max_fan_out: z.number().int().min(1).max(64).default(4),
  })
  .strict();
export type DelegationConfig = z.output<typeof DelegationConfigSchema>;
const DEFAULT_DELEGATION: DelegationConfig = Object.freeze(DelegationConfigSchema.parse({}));
export const DelegationConfigKey = definePluginConfigKey<DelegationConfig>(
  'delegation',
  DelegationConfigSchema as z.ZodType<DelegationConfig>,
  () => DEFAULT_DELEGATION,
);

/** The run a delegation started: a child thread of this runtime, or a task (and its context) of a remote agent. */
export interface DelegateChild {
  readonly agent_id: string;
  /** `local`, or the remote endpoint's backend (`a2a`). */
  readonly backend: string;
  /** Local: the child thread. Remote: the A2A context. */
  readonly thread_id: string;
  /** Local: the child run. Remote: the A2A task. */
  readonly run_id: string;
  /** How deep the child runs (the root run is at 0). */
  readonly depth: number;
}

export const DelegateChildSchema = z
  .object({ agent_id: z.string(), backend: z.string(), thread_id: z.string(), run_id: z.string(), depth: z.number().int().nonnegative() })
  .strict() as z.ZodType<DelegateChild>;

/** How a sub-run came back. */
export type DelegateOutcome =
  | { readonly status: 'completed'; readonly child: DelegateChild; readonly response: string; readonly steps: number }
  /** The child waits on a decision: `target_id` is what it waits on (its call id, or the remote task), `suspension` its question. */
  | { readonly status: 'suspended'; readonly child: DelegateChild; readonly targetId: string; readonly suspension: Suspension; readonly steps: number }
  | {
      readonly status: 'failed' | 'cancelled' | 'timeout';
      readonly child?: DelegateChild;
      readonly message: string;
      /** A machine-readable reason (`delegation_depth_exceeded`, …) when the runtime refused the delegation. */
      readonly code?: string;
      readonly response?: string;
      readonly steps: number;
    };

/** One delegation, as the tool asks its backend for it. */
export interface DelegateRequest {
  readonly agentId: string;
  /** The delegate's spec (a remote one carries its endpoint). */
  readonly spec: AgentSpec;
  readonly prompt: string;
  /** How deep sub-runs may nest below the root (the delegating agent's `delegation.max_depth`). */
  readonly maxDepth: number;
  readonly parent: { readonly threadId: string; readonly runId: string; readonly callId: string };
  /** The parent call's signal: when it aborts, the child is cancelled. */
  readonly signal: AbortSignal;
  /** Go on with a child that suspended: the decision for what it waits on. */
  readonly resume?: { readonly child: DelegateChild; readonly targetId: string; readonly decision: ToolCallResume };
  /** What the child does, as it happens (a remote backend tells what its protocol shows, as these events). */
  readonly onEvent: (event: AgentEvent) => void | Promise<void>;
}

/** Runs delegations (book: AgentBackend). The runtime is the local one; `a2aBackend` the remote one. */
export interface DelegateBackend {
  run(request: DelegateRequest): Promise<DelegateOutcome>;
}

/** Makes the backend of a remote endpoint (by `endpoint.backend`), or says why it cannot. */
export type RemoteBackendFactory = (endpoint: RemoteEndpoint, env: Env) => DelegateBackend;

/** What the runtime lends the delegation tools it makes at resolve. */
export interface DelegationHost {
  /** The backend for a delegate: the runtime itself, or a remote backend by its endpoint. */
  backendOf(spec: AgentSpec): DelegateBackend | undefined;
  /** Counts a sub-run of `runId` in; false when it has `max` going already. */
  enter(runId: string, max: number): boolean;
  leave(runId: string): void;
  /** Wraps each delegation tool (a recorder makes it a port). */
  readonly wrap?: (tool: Tool) => Tool;
  /** Tools standing in for delegation tools, by delegate id (a replay answers from the recording). */
  readonly stand_ins?: ReadonlyMap<string, Tool>;
}

/** The delegation a parent's suspension waits on, read back from its ticket. */
export function delegationOf(ticket: SuspendTicket | undefined): { readonly child: DelegateChild; readonly targetId: string } | undefined {
  const params = ticket?.suspension.parameters;
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return undefined;
  const d = params['delegation'];
  if (typeof d !== 'object' || d === null || Array.isArray(d)) return undefined;
  const child = DelegateChildSchema.safeParse(d['child']);
  const target = d['target_id'];
  return child.success && typeof target === 'string' ? { child: child.data, targetId: target } : undefined;
}

/** A child's termination as an outcome (0.6 `map_termination`: a stop or a block is a failure). */
export function outcomeOfTermination(termination: TerminationReason, child: DelegateChild, response: string, steps: number): DelegateOutcome {
  switch (termination.type) {
    case 'natural_end':
    case 'behavior_requested':
      return { status: 'completed', child, response, steps };
    case 'cancelled':
      return { status: 'cancelled', child, message: 'the sub-run was cancelled', response, steps };
    case 'stopped':
      return { status: 'failed', child, message: `stopped: ${termination.value.code}`, response, steps };
    case 'blocked':
      return { status: 'failed', child, message: `blocked: ${termination.value}`, response, steps };
    case 'error':
      return { status: 'failed', child, message: termination.value, response, steps };
    case 'suspended':
      return { status: 'failed', child, message: 'the sub-run suspended without a call to decide', response, steps };
    default:
      return unreachable(termination);
  }
}

/** The `agent-delegation` activity of a parent call: the child as the stream shows it. */
interface DelegationView {
  schema: 'agent-delegation.v1';
  agent_id: string;
  status: 'running' | 'completed' | 'suspended' | 'failed' | 'cancelled' | 'timeout';
  parent_run_id: string;
  parent_call_id: string;
  thread_id?: string;
  run_id?: string;
  steps: number;
  tool_calls: { id: string; name: string; status: 'running' | 'succeeded' | 'failed' | 'suspended' }[];
}

const PromptSchema = z.object({ prompt: z.string() }).loose();

/**
 * The tool `agent_run_<id>` (book: AgentTool): `{prompt}` in; the delegate's final answer out as
 * `{agent_id, status, response, steps, thread_id, run_id}`. A delegate that fails, is cancelled or
 * is refused (too deep, too many at once) is an error result the model reads; one that suspends
 * suspends this call.
 */
export function delegateTool(spec: AgentSpec, description: string, host: DelegationHost, config: DelegationConfig): Tool {
  const agentId = spec.id;
  const id = delegateToolId(agentId);
  const backend = host.backendOf(spec);
  const errorOf = (outcome: Extract<DelegateOutcome, { status: 'failed' | 'cancelled' | 'timeout' }>): ToolResult => {
    const message = `delegation to ${agentId} ${outcome.status === 'failed' ? 'failed' : outcome.status === 'cancelled' ? 'was cancelled' : 'timed out'}: ${outcome.message}`;
    return {
      tool_name: id,
      status: 'error',
      data: {
        agent_id: agentId,
        status: outcome.status,
        ...(outcome.code !== undefined ? { code: outcome.code } : {}),
        ...(outcome.response !== undefined && outcome.response !== '' ? { response: outcome.response } : {}),
        steps: outcome.steps,
        ...(outcome.child !== undefined ? { thread_id: outcome.child.thread_id, run_id: outcome.child.run_id } : {}),
      },
      message: outcome.code !== undefined ? `[${outcome.code}] ${message}` : message,
    };
  };
  return {
    descriptor: {
      id,
      name: id,
      description,
      parameters: {
        type: 'object',
        properties: { prompt: { type: 'string', description: `The task for the ${agentId} agent` } },
        required: ['prompt'],
      },
      category: DELEGATION_CATEGORY,
    },
    validateArgs: (args) => {
      const parsed = PromptSchema.safeParse(args);
      if (!parsed.success) throw new ToolFailure({ code: 'invalid_arguments', message: 'prompt: a string is required' });
      if (parsed.data.prompt.trim() === '') throw new ToolFailure({ code: 'invalid_arguments', message: 'prompt: must not be empty' });
    },
    execute: async (args, ctx) => {
      const prompt = (args as { prompt: string }).prompt.trim();
      if (backend === undefined)
        return errorOf({
          status: 'failed',
          code: 'delegation_unavailable',
          message: `no backend for ${spec.endpoint?.backend ?? 'local'} agents here`,
          steps: 0,
        });
      const waiting = ctx.resume?.decision.action === 'resume' ? delegationOf(ctx.resume.ticket) : undefined;
      if (!host.enter(ctx.runId, config.max_fan_out)) {
        return errorOf({
          status: 'failed',
          code: 'delegation_fan_out_exceeded',
          message: `this run already has ${config.max_fan_out} sub-runs going (delegation.max_fan_out)`,
          steps: 0,
        });
      }
      const view: DelegationView = {
        schema: 'agent-delegation.v1',
        agent_id: agentId,
        status: 'running',
        parent_run_id: ctx.runId,
        parent_call_id: ctx.callId,
        steps: 0,
        tool_calls: [],
      };
      if (waiting !== undefined) {
        view.thread_id = waiting.child.thread_id;
        view.run_id = waiting.child.run_id;
      }
      const show = (): Promise<void> => ctx.reportActivity(DELEGATION_ACTIVITY, structuredClone(view) as unknown as JsonValue);
      try {
        await ctx.reportProgress('running', waiting !== undefined ? `resuming the delegation to ${agentId}` : `delegating to ${agentId}`);
        const outcome = await backend.run({
          agentId,
          spec,
          prompt,
          maxDepth: config.max_depth,
          parent: { threadId: ctx.threadId, runId: ctx.runId, callId: ctx.callId },
          signal: ctx.signal,
          ...(waiting !== undefined
            ? { resume: { child: waiting.child, targetId: waiting.targetId, decision: (ctx.resume as NonNullable<ToolCallContext['resume']>).decision } }
            : {}),
          onEvent: (event) => follow(view, event, show, ctx),
        });
        if (outcome.child !== undefined) {
          view.thread_id = outcome.child.thread_id;
          view.run_id = outcome.child.run_id;
        }
        view.status = outcome.status;
        view.steps = outcome.steps;
        await show();
        await ctx.reportProgress(PROGRESS_OF[outcome.status], messageOf(agentId, outcome));
        switch (outcome.status) {
          case 'completed':
            return {
              tool_name: id,
              status: 'success',
              data: {
                agent_id: agentId,
                status: 'completed',
                response: outcome.response,
                steps: outcome.steps,
                thread_id: outcome.child.thread_id,
                run_id: outcome.child.run_id,
              },
              message: null,
            };
          case 'suspended': {
            const s = outcome.suspension;
            return {
              tool_name: id,
              status: 'pending',
              data: null,
              message: `delegation to ${agentId} waits: ${s.message ?? s.action}`,
              suspension: {
                suspension: {
                  id: `delegate:${outcome.child.run_id}:${outcome.targetId}`,
                  action: s.action,
                  ...(s.message !== undefined ? { message: s.message } : {}),
                  parameters: {
                    delegation: { child: { ...outcome.child }, target_id: outcome.targetId },
                    ...(s.parameters !== undefined ? { suspension: s.parameters } : {}),
                  } as JsonValue,
                  ...(s.response_schema !== undefined ? { response_schema: s.response_schema } : {}),
                },
                pending: { id: ctx.callId, name: id, arguments: args },
                resume_mode: 'replay_tool_call',
              },
            };
          }
          case 'cancelled':
          case 'failed':
          case 'timeout':
            return errorOf(outcome);
          default:
            return unreachable(outcome);
        }
      } finally {
        host.leave(ctx.runId);
      }
    },
  };
}

const PROGRESS_OF: Record<DelegateOutcome['status'], ProgressStatus> = {
  completed: 'done',
  suspended: 'pending',
  failed: 'failed',
  cancelled: 'failed',
  timeout: 'failed',
};

function messageOf(agentId: string, o: DelegateOutcome): string {
  switch (o.status) {
    case 'completed':
      return `delegation to ${agentId} completed`;
    case 'suspended':
      return `delegation to ${agentId} waits: ${o.suspension.message ?? o.suspension.action}`;
    case 'cancelled':
      return `delegation to ${agentId} cancelled`;
    case 'timeout':
      return `delegation to ${agentId} timed out`;
    case 'failed':
      return `delegation to ${agentId} failed: ${o.message}`;
    default:
      return unreachable(o);
  }
}

/** A child's event, as the parent call shows it: text as the call's output, tool calls and its state in the activity. */
async function follow(view: DelegationView, event: AgentEvent, show: () => Promise<void>, ctx: ToolCallContext): Promise<void> {
  switch (event.event_type) {
    case 'run_start':
      view.thread_id = event.thread_id;
      view.run_id = event.run_id;
      view.status = 'running';
      return show();
    case 'text_delta':
      return ctx.streamOutput(event.delta);
    case 'tool_call_ready': {
      const known = view.tool_calls.find((c) => c.id === event.id);
      if (known === undefined) view.tool_calls.push({ id: event.id, name: event.name, status: 'running' });
      else known.status = 'running';
      return show();
    }
    case 'tool_call_done': {
      const known = view.tool_calls.find((c) => c.id === event.id);
      const status = event.outcome === 'succeeded' ? 'succeeded' : event.outcome === 'failed' ? 'failed' : 'suspended';
      if (known === undefined) view.tool_calls.push({ id: event.id, name: event.result.tool_name, status });
      else known.status = status;
      return show();
    }
    case 'tool_call_resumed': {
      const known = view.tool_calls.find((c) => c.id === event.target_id);
      if (known === undefined) return undefined;
      const r = event.result;
      known.status = typeof r === 'object' && r !== null && !Array.isArray(r) && 'error' in r ? 'failed' : 'succeeded';
      return show();
    }
    case 'step_end':
      view.steps += 1;
      return undefined;
    case 'run_finish':
    case 'error':
    case 'reasoning_delta':
    case 'tool_call_start':
    case 'tool_call_delta':
    case 'tool_call_stream_delta':
    case 'reasoning_encrypted_value':
    case 'messages_snapshot':
    case 'activity_snapshot':
    case 'activity_delta':
    case 'step_start':
    case 'inference_complete':
    case 'state_snapshot':
    case 'state_delta':
      return undefined;
    default:
      return unreachable(event);
  }
}
