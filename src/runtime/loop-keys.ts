import { z } from 'zod';
import { unreachable } from '../contract/never.ts';
import { AgentOverlaySchema, type AgentOverlay } from '../contract/agent-spec.ts';
import { InferenceOverrideSchema, mergeInferenceOverride, type InferenceOverride } from '../contract/inference.ts';
import { JsonValueSchema, type JsonValue } from '../contract/json.ts';
import { canTransitionRun, canTransitionToolCall, RunStatusSchema, ToolCallStatusSchema, type RunStatus, type ToolCallStatus } from '../contract/lifecycle.ts';
import { ToolCallResumeModeSchema, ToolCallResumeSchema, type ToolCallResume, type ToolCallResumeMode } from '../contract/tool.ts';
import { initialStopStats, type StopPolicyStats } from '../core/policies/stop-policy.ts';
import { defineStateKey } from '../core/state/state-key.ts';

/** Thrown by a loop reducer for a transition the state machine forbids: never silently skipped. */
export class IllegalTransition extends Error {
  constructor(what: string, from: string, to: string) {
    super(`illegal ${what} transition ${from} → ${to}`);
    this.name = 'IllegalTransition';
  }
}

/**
 * A copy of `map` with `key` set, as an own property whatever the key. The copy has no prototype:
 * an id such as "__proto__" is a key like any other (there is no inherited setter to assign
 * through), and V8 keeps such an object as a dictionary, so a call id never seen before (every call
 * a provider makes) adds no hidden class of its own to a tree that only grows.
 */
export function withEntry<V>(map: { readonly [key: string]: V } | undefined, key: string, value: V): { readonly [key: string]: V } {
  const next: { [key: string]: V } = Object.create(null);
  let keys: readonly string[] = NO_KEYS;
  if (map !== undefined && map === lastMade) {
    keys = lastKeys;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i] as string;
      next[k] = map[k] as V;
    }
  } else if (map !== undefined) {
    const listed: string[] = [];
    for (const k in map) {
      next[k] = map[k] as V;
      listed.push(k);
    }
    keys = listed;
  }
  if (!(key in next)) keys = [...keys, key];
  next[key] = value;
  lastMade = next;
  lastKeys = keys;
  return next;
}

/**
 * The own keys of `map`, in no promised order: the list `withEntry` kept when `map` is the map it
 * made last (the usual case: a call's state just committed), else the map's own.
 */
export function keysOf(map: { readonly [key: string]: unknown }): readonly string[] {
  return map === lastMade ? lastKeys : Object.keys(map);
}

/**
 * The map `withEntry` made last and its keys, in the order they were set (an index-like key
 * enumerates first, but a copy sets it wherever it comes): the next entry is most often set on
 * that very map (a call's next status, the batch's next result), and a dictionary is about three
 * times slower to enumerate than to copy from a list. Only a map made here is listed,
 * and none is written after it is made (a state value is replaced, never changed). The map is held
 * until the next call: at most one map's values outlive their run. (A private field stamped on
 * each map instead would hold nothing, but costs a dictionary object more than the enumeration.)
 */
let lastMade: object | undefined;
let lastKeys: readonly string[] = [];
const NO_KEYS: readonly string[] = Object.freeze([]);

// ---- run lifecycle (core-spec §3.1) -----------------------------------------------------------------

export interface RunLifecycleState {
  readonly run_id: string;
  readonly status: RunStatus;
  readonly status_reason?: string;
  readonly updated_at: number;
  readonly step_count: number;
}

export type RunLifecycleUpdate =
  | { readonly op: 'start'; readonly run_id: string; readonly at: number }
  | { readonly op: 'step_completed'; readonly at: number }
  | { readonly op: 'set_waiting'; readonly reason: string; readonly at: number }
  | { readonly op: 'set_running'; readonly at: number }
  | { readonly op: 'done'; readonly reason: string; readonly at: number };

const RunLifecycleSchema = z.object({
  run_id: z.string(),
  status: RunStatusSchema,
  status_reason: z.string().optional(),
  updated_at: z.number(),
  step_count: z.number().int().nonnegative(),
});

/**
 * The state after a transition, written field by field (a reducer on every step): the reason is
 * replaced by `reason` (dropped when there is none), and the keys are always in this order.
 */
function moveRun(state: RunLifecycleState, to: RunStatus, at: number, reason?: string, runId = state.run_id, steps = state.step_count): RunLifecycleState {
  if (!canTransitionRun(state.status, to)) throw new IllegalTransition('run', state.status, to);
  return reason === undefined
    ? { run_id: runId, status: to, updated_at: at, step_count: steps }
    : { run_id: runId, status: to, updated_at: at, step_count: steps, status_reason: reason };
}

export const RunLifecycle = defineStateKey<RunLifecycleState, RunLifecycleUpdate>({
  key: '__runtime.run_lifecycle',
  init: () => ({ run_id: '', status: 'created', updated_at: 0, step_count: 0 }),
  apply: (s, u) => {
    switch (u.op) {
      case 'start':
        return moveRun(s, 'running', u.at, undefined, u.run_id, 0);
      case 'step_completed':
        return moveRun(s, 'running', u.at, s.status_reason, s.run_id, s.step_count + 1);
      case 'set_waiting':
        return moveRun(s, 'waiting', u.at, u.reason);
      case 'set_running':
        return moveRun(s, 'running', u.at);
      case 'done':
        return moveRun(s, 'done', u.at, u.reason);
      default:
        return unreachable(u, 'run lifecycle update');
    }
  },
  codec: RunLifecycleSchema as z.ZodType<RunLifecycleState>,
});

// ---- tool call states (core-spec §4.5), thread-scoped ---------------------------------------------

export interface ToolCallState {
  readonly call_id: string;
  readonly tool_name: string;
  readonly arguments: JsonValue;
  readonly status: ToolCallStatus;
  readonly updated_at: number;
  readonly resume_mode: ToolCallResumeMode;
  readonly suspension_id?: string;
  readonly suspension_reason?: string;
  readonly resume_input?: ToolCallResume;
  /** The dispatch this is, from 2: a call run again after its run was taken up from the store (absent: the first). */
  readonly attempt?: number;
}

export type ToolCallStatesUpdate = { readonly op: 'put'; readonly state: ToolCallState } | { readonly op: 'clear' };

const ToolCallStateSchema = z.object({
  call_id: z.string(),
  tool_name: z.string(),
  arguments: JsonValueSchema,
  status: ToolCallStatusSchema,
  updated_at: z.number(),
  resume_mode: ToolCallResumeModeSchema,
  suspension_id: z.string().optional(),
  suspension_reason: z.string().optional(),
  resume_input: ToolCallResumeSchema.optional(),
  attempt: z.number().int().min(2).optional(),
});

export type ToolCallStateMap = { readonly [callId: string]: ToolCallState };

export const ToolCallStates = defineStateKey<ToolCallStateMap, ToolCallStatesUpdate>({
  key: '__runtime.tool_call_states',
  merge: 'commutative',
  init: () => ({}),
  apply: (map, u) => {
    if (u.op === 'clear') return {};
    const from = map[u.state.call_id]?.status ?? 'new';
    if (!canTransitionToolCall(from, u.state.status)) throw new IllegalTransition('tool call', from, u.state.status);
    return withEntry(map, u.state.call_id, u.state);
  },
  codec: z.record(z.string(), ToolCallStateSchema) as z.ZodType<ToolCallStateMap>,
});

// ---- loop control: a plugin keeps a run going past a natural end -----------------------------------

/**
 * `continue`: when the step that is ending is a natural end (an answer without tool calls), the run
 * takes another step instead of finishing; `reason` says why (the plugin that asked). Read and
 * cleared at every step's end, whatever ended it; `max_rounds` and every other stop still apply.
 */
export interface LoopControlState {
  readonly type: 'continue';
  readonly reason: string;
}

export const LoopControl = defineStateKey<LoopControlState, LoopControlState>({
  key: '__runtime.loop_control',
  init: () => ({ type: 'continue', reason: '' }),
  apply: (_s, u) => u,
  codec: z.object({ type: z.literal('continue'), reason: z.string() }).strict() as z.ZodType<LoopControlState>,
});

// ---- the agent a handoff made active ---------------------------------------------------------------

/**
 * `__runtime.agent_overlay`: the agent the run is acting as (a handoff plugin writes it): its name
 * and the overlay to apply to the run's own agent, or no overlay when the name is a registered
 * agent (its system prompt, model and tool lists are applied). The loop reads it at the top of each
 * step, before `step_start`; absent, the run's own agent. Cleared with the key.
 */
export interface AgentOverlayState {
  readonly name: string;
  readonly overlay?: AgentOverlay;
}
export const AgentOverlayKey = defineStateKey<AgentOverlayState, AgentOverlayState>({
  key: '__runtime.agent_overlay',
  init: () => ({ name: '' }),
  apply: (_s, u) => u,
  codec: z.object({ name: z.string().min(1), overlay: AgentOverlaySchema.optional() }).strict() as z.ZodType<AgentOverlayState>,
});

// ---- per-step accumulators of the built-in actions -------------------------------------------------

export interface ToolFilterState {
  readonly excluded: readonly string[];
  readonly includeOnly: readonly (readonly string[])[];
}

export type ToolFilterUpdate =
  | { readonly op: 'exclude'; readonly id: string }
  | { readonly op: 'include_only'; readonly ids: readonly string[] }
  | { readonly op: 'clear' };

export const ToolFilter = defineStateKey<ToolFilterState, ToolFilterUpdate>({
  key: '__runtime.tool_filter_state',
  merge: 'commutative',
  init: () => ({ excluded: [], includeOnly: [] }),
  apply: (s, u) => {
    switch (u.op) {
      case 'exclude':
        return { ...s, excluded: [...s.excluded, u.id] };
      case 'include_only':
        return { ...s, includeOnly: [...s.includeOnly, u.ids] };
      case 'clear':
        return { excluded: [], includeOnly: [] };
      default:
        return unreachable(u, 'tool filter update');
    }
  },
  codec: z.object({ excluded: z.array(z.string()), includeOnly: z.array(z.array(z.string())) }) as z.ZodType<ToolFilterState>,
});

/** Applies a tool filter: keep the union of every include-only list (if any), then drop excluded ids. */
export function filterToolIds(ids: readonly string[], filter: ToolFilterState | undefined): string[] {
  if (filter === undefined) return [...ids];
  const allowed = filter.includeOnly.length > 0 ? new Set(filter.includeOnly.flat()) : undefined;
  return ids.filter((id) => (allowed === undefined || allowed.has(id)) && !filter.excluded.includes(id));
}

export type InferenceOverrideUpdate = { readonly op: 'merge'; readonly override: InferenceOverride } | { readonly op: 'clear' };

export const InferenceOverrideState = defineStateKey<InferenceOverride, InferenceOverrideUpdate>({
  key: '__runtime.inference_override_state',
  merge: 'commutative',
  init: () => ({}),
  apply: (s, u) => (u.op === 'clear' ? {} : mergeInferenceOverride(s, u.override)),
  codec: InferenceOverrideSchema,
});

// ---- context messages (core-spec §3.7) --------------------------------------------------------------

export const ContextTargetSchema = z.enum(['system', 'session', 'conversation', 'suffix_system']);
export type ContextTarget = z.infer<typeof ContextTargetSchema>;

export const ContextMessageSchema = z.object({
  key: z.string().min(1),
  role: z.enum(['system', 'user', 'assistant']).default('system'),
  content: z.string(),
  target: ContextTargetSchema.default('system'),
  priority: z.number().int().default(0),
  cooldown_turns: z.number().int().nonnegative().default(0),
  persistent: z.boolean().default(false),
});
export type ContextMessage = z.output<typeof ContextMessageSchema>;
export type ContextMessageInput = z.input<typeof ContextMessageSchema>;

export interface ContextStoreState {
  readonly messages: { readonly [key: string]: ContextMessage };
  /** Last step each key was injected at, and its content then (throttling). */
  readonly injected: { readonly [key: string]: { readonly step: number; readonly content: string } };
}

export type ContextStoreUpdate = { readonly op: 'upsert'; readonly message: ContextMessage; readonly step: number } | { readonly op: 'consume' };

export const ContextMessages = defineStateKey<ContextStoreState, ContextStoreUpdate>({
  key: '__runtime.context_message_store',
  merge: 'commutative',
  init: () => ({ messages: {}, injected: {} }),
  apply: (s, u) => {
    if (u.op === 'consume') {
      return { ...s, messages: Object.fromEntries(Object.entries(s.messages).filter(([, m]) => m.persistent)) };
    }
    return {
      messages: Object.fromEntries([...Object.entries(s.messages).filter(([k]) => k !== u.message.key), [u.message.key, u.message]]),
      injected: Object.fromEntries([
        ...Object.entries(s.injected).filter(([k]) => k !== u.message.key),
        [u.message.key, { step: u.step, content: u.message.content }],
      ]),
    };
  },
  codec: z.object({
    messages: z.record(z.string(), ContextMessageSchema),
    injected: z.record(z.string(), z.object({ step: z.number(), content: z.string() })),
  }) as z.ZodType<ContextStoreState>,
});

const TARGET_ORDER: Readonly<Record<ContextTarget, number>> = { system: 0, session: 1, conversation: 2, suffix_system: 3 };

/** Context messages in injection order: (target, priority, key). */
export function orderedContextMessages(state: ContextStoreState | undefined): ContextMessage[] {
  if (state === undefined) return [];
  return Object.values(state.messages).sort(
    (a, b) => TARGET_ORDER[a.target] - TARGET_ORDER[b.target] || a.priority - b.priority || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
  );
}

// ---- tool interception (book: 插件系统内部机制 → 工具拦截优先级) -----------------------------------

/**
 * What a gate can do to a call (`ToolInterceptAction`): `block` — it does not run and the run ends
 * `blocked`; `refuse` — it does not run, its result is an error with the reason (the model reads it)
 * and the run goes on; `suspend` — it waits for a decision; `set_result` — it does not run and this
 * is its result. The payload is recorded in state: its fields are snake_case.
 */
export const ToolInterceptSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('block'), reason: z.string() }),
  z.object({ type: z.literal('refuse'), reason: z.string() }),
  z.object({ type: z.literal('suspend'), ticket: z.unknown() }),
  z.object({ type: z.literal('set_result'), result: z.unknown() }),
]);
export type ToolIntercept = z.output<typeof ToolInterceptSchema>;

/**
 * Which intercept wins when several gates answer for one call, strongest first. A refusal outranks
 * a question: asking a person about a call that is refused anyway would let their approval run it
 * (an approved call is replayed without its gate, docs/adr/0031-tool-order-state-machine.md). Two
 * intercepts of the same kind: the first wins and the others are recorded as conflicts.
 */
export const INTERCEPT_PRECEDENCE = Object.freeze(['block', 'refuse', 'suspend', 'set_result'] as const) satisfies readonly ToolIntercept['type'][];

export interface InterceptRecord {
  readonly call_id: string;
  readonly intercept: ToolIntercept;
}

export type InterceptUpdate = { readonly op: 'add'; readonly record: InterceptRecord } | { readonly op: 'clear'; readonly call_id: string };

export const ToolIntercepts = defineStateKey<readonly InterceptRecord[], InterceptUpdate>({
  key: '__runtime.tool_intercepts',
  merge: 'commutative',
  init: () => [],
  apply: (s, u) => (u.op === 'add' ? [...s, u.record] : s.filter((r) => r.call_id !== u.call_id)),
  codec: z.array(z.object({ call_id: z.string(), intercept: ToolInterceptSchema })) as z.ZodType<readonly InterceptRecord[]>,
});

/** Same-priority intercepts for one call after the first: recorded, never applied. */
export const InterceptConflicts = defineStateKey<readonly InterceptRecord[], InterceptRecord>({
  key: '__runtime.tool_intercept_conflicts',
  merge: 'commutative',
  init: () => [],
  apply: (s, r) => [...s, r],
  codec: z.array(z.object({ call_id: z.string(), intercept: ToolInterceptSchema })) as z.ZodType<readonly InterceptRecord[]>,
});

// ---- stop condition statistics (core-spec §7) --------------------------------------------------------

/** The statistics with the run's start time, field by field in the key's order (no spread: once per step and per run). */
export function withStartedAt(o: StopPolicyStats, startedAt: number): StopPolicyStats & { readonly startedAt: number } {
  return {
    stepCount: o.stepCount,
    totalInputTokens: o.totalInputTokens,
    totalOutputTokens: o.totalOutputTokens,
    elapsedMs: o.elapsedMs,
    consecutiveErrors: o.consecutiveErrors,
    lastToolNames: o.lastToolNames,
    lastResponseText: o.lastResponseText,
    recentResponseTexts: o.recentResponseTexts,
    startedAt,
  };
}

export const StopStats = defineStateKey<StopPolicyStats & { readonly startedAt: number }, StopPolicyStats & { readonly startedAt: number }>({
  key: '__runtime.stop_condition_stats',
  init: () => withStartedAt(initialStopStats(), 0),
  apply: (_s, u) => u,
  codec: z.object({
    stepCount: z.number(),
    totalInputTokens: z.number(),
    totalOutputTokens: z.number(),
    elapsedMs: z.number(),
    consecutiveErrors: z.number(),
    lastToolNames: z.array(z.string()),
    lastResponseText: z.string(),
    recentResponseTexts: z.array(z.string()),
    startedAt: z.number(),
  }) as unknown as z.ZodType<StopPolicyStats & { readonly startedAt: number }>,
  encode: (s) => s as unknown as JsonValue,
});
