import { z } from 'zod';
import type { Message, ToolCall } from '../contract/message.ts';
import { preRegistered, type PhaseContext, type PluginRegistrar } from '../core/phase/plugin.ts';
import { StateCommand } from '../core/state/state-command.ts';
import { defineStateKey, type StateKey } from '../core/state/state-key.ts';
import { AddContextMessage, ToolInterceptAction } from '../runtime/builtin-plugins.ts';
import type { ToolIntercept } from '../runtime/loop-keys.ts';
import { andThen } from '../runtime/maybe-promise.ts';
import type { RuntimePlugin } from '../runtime/resolve.ts';

/**
 * `definePlugin`: the common plugins in a few lines — a tool gate, a prompt addition, a count kept
 * per thread — compiled to an ordinary `RuntimePlugin` (phase hooks, a state key, tool intercepts;
 * docs/plugins.md). Everything an author reads or writes here is camelCase; what the plugin stores
 * (its count) and the intercepts it records are the runtime's own, snake_case where they have fields.
 */

/** What a tool gate answers for one call; returning nothing lets the call run. */
export type ToolVerdict =
  | { readonly type: 'refuse'; readonly reason: string }
  | { readonly type: 'block'; readonly reason: string }
  | { readonly type: 'ask'; readonly message: string };

/** The call does not run; its result is an error with `reason`, which the model reads, and the run goes on. */
export const refuse = (reason: string): ToolVerdict => ({ type: 'refuse', reason });
/** The call does not run, the calls after it in the batch are interrupted, and the run ends `blocked` with `reason`. */
export const block = (reason: string): ToolVerdict => ({ type: 'block', reason });
/** The call waits for a person's decision (`message` is what they are asked); approved, it runs as it was asked. */
export const ask = (message: string): ToolVerdict => ({ type: 'ask', message });

/** What a `definePlugin` function is told about the run. */
export interface DefinedPluginContext {
  readonly agentId: string;
  readonly threadId: string;
  readonly runId: string;
  /** The thread's history as the phase sees it (read-only). */
  readonly messages: readonly Message[];
  /** The thread's count (`countPerThread`): the tool calls before this one, or the runs so far with this one; 0 when the plugin keeps none. */
  readonly count: number;
}

type MaybeAsync<T> = T | Promise<T>;

/** What `definePlugin` is given: the plugin's name and any of its parts. */
export interface PluginDefinition {
  /** The plugin's one identity: its id in `withPlugin` and in an agent's `plugin_ids`. */
  readonly name: string;
  /** Judges each tool call before it runs, in the model's order. */
  readonly gateTool?: (call: ToolCall, ctx: DefinedPluginContext) => MaybeAsync<ToolVerdict | void>;
  /** System text added to the request before each inference; nothing (or '') adds nothing. */
  readonly addToPrompt?: (ctx: DefinedPluginContext) => MaybeAsync<string | void>;
  /**
   * What the plugin counts per thread — each tool call the model asks for (`toolCalls`, counted as
   * the call is gated) or each run (`runs`, counted as it starts) — kept in the thread's state under
   * `<name>.count` and handed to the functions above as `ctx.count`.
   */
  readonly countPerThread?: 'toolCalls' | 'runs';
}

/** A definition `definePlugin` cannot compile: `field` names what is wrong. */
export class PluginDefinitionError extends Error {
  override readonly name = 'PluginDefinitionError';
  readonly field: string;

  constructor(field: string, message: string) {
    super(`definePlugin: ${field}: ${message}`);
    this.field = field;
  }
}

const COUNTS = ['toolCalls', 'runs'] as const;
const FUNCTIONS = ['gateTool', 'addToPrompt'] as const;

/**
 * A plugin from a definition. Its registration wires functions made once, here, and keeps nothing
 * of its own: it is registered once, now (`preRegistered`), and agents whose plugins all are share
 * one execution env between their runs (docs/adr/0044-plugin-api.md).
 */
export function definePlugin(definition: PluginDefinition): RuntimePlugin {
  checked(definition);
  const { name, gateTool, addToPrompt, countPerThread } = definition;
  const counter = countPerThread === undefined ? undefined : counterKey(name);
  return preRegistered({
    name,
    register: (r: PluginRegistrar) => {
      if (counter !== undefined) r.registerKey(counter, { scope: 'thread' });
      if (counter !== undefined && countPerThread === 'runs') r.registerPhaseHook('run_start', () => StateCommand.empty().update(counter, 1));
      const countsCalls = counter !== undefined && countPerThread === 'toolCalls' ? counter : undefined;
      if (gateTool !== undefined || countsCalls !== undefined) {
        r.registerPhaseHook('before_tool_execute', (ctx) => {
          const call = ctx.input.toolCall;
          const cmd = countsCalls === undefined ? StateCommand.empty() : StateCommand.empty().update(countsCalls, 1);
          if (gateTool === undefined) return cmd;
          const verdict = gateTool(call, contextOf(ctx, counter));
          return andThen(verdict, (v) => gated(cmd, call, v));
        });
      }
      if (addToPrompt !== undefined) {
        r.registerPhaseHook('before_inference', (ctx) => {
          const text = addToPrompt(contextOf(ctx, counter));
          return andThen(text, (t) => prompted(name, t));
        });
      }
    },
  });
}

/** The thread-scoped count of plugin `name` (a sum: hooks of one phase may add to it together). */
function counterKey(name: string): StateKey<number, number> {
  return defineStateKey<number, number>({
    key: `${name}.count`,
    merge: 'commutative',
    init: () => 0,
    apply: (n, by) => n + by,
    codec: z.number().int().nonnegative(),
  });
}

function contextOf(ctx: PhaseContext<'before_tool_execute' | 'before_inference'>, counter: StateKey<number, number> | undefined): DefinedPluginContext {
  const { agentSpec, threadId, runId, messages } = ctx.input;
  return { agentId: agentSpec.id, threadId, runId, messages, count: counter === undefined ? 0 : ctx.snapshot.getOrDefault(counter) };
}

/** `cmd` with the intercept the verdict compiles to (none for an allowed call). */
function gated(cmd: StateCommand, call: ToolCall, verdict: ToolVerdict | void): StateCommand {
  if (verdict === undefined) return cmd;
  return cmd.scheduleAction(ToolInterceptAction, { call_id: call.id, intercept: interceptOf(call, verdict) });
}

function interceptOf(call: ToolCall, verdict: ToolVerdict): ToolIntercept {
  switch (verdict.type) {
    case 'refuse':
      return { type: 'refuse', reason: verdict.reason };
    case 'block':
      return { type: 'block', reason: verdict.reason };
    case 'ask':
      return {
        type: 'suspend',
        ticket: {
          suspension: { id: `ask-${call.id}`, action: `tool:${call.name}`, message: verdict.message },
          pending: { id: call.id, name: call.name, arguments: call.arguments },
          resume_mode: 'replay_tool_call',
        },
      };
    default: {
      // A verdict not made by `refuse`, `block` or `ask` (plain JavaScript): the call does not run.
      const unknown: never = verdict;
      return { type: 'block', reason: `tool gate answered ${JSON.stringify(unknown)}, not a verdict` };
    }
  }
}

/** The system text of this inference, as a context message consumed by it (nothing when there is no text). */
function prompted(name: string, text: string | void): StateCommand | undefined {
  if (text === undefined || text === '') return undefined;
  return StateCommand.empty().scheduleAction(AddContextMessage, { key: `${name}.prompt`, role: 'system', content: text, target: 'system' });
}

/** The definition as `definePlugin` needs it, or the field that is not (a user's JavaScript is not type-checked). */
function checked(definition: PluginDefinition): void {
  const d = definition as unknown as Record<string, unknown> | null;
  if (typeof d !== 'object' || d === null) throw new PluginDefinitionError('definition', 'an object with at least a name');
  if (typeof d['name'] !== 'string' || d['name'] === '') throw new PluginDefinitionError('name', 'a non-empty string');
  for (const f of FUNCTIONS) if (d[f] !== undefined && typeof d[f] !== 'function') throw new PluginDefinitionError(f, 'a function');
  const counts = d['countPerThread'];
  if (counts !== undefined && !(COUNTS as readonly unknown[]).includes(counts))
    throw new PluginDefinitionError('countPerThread', `'toolCalls' or 'runs', not ${JSON.stringify(counts)}`);
}
