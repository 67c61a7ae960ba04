import type { AgentSpec } from '../contract/agent-spec.ts';
import { JsonValueSchema, type JsonValue } from '../contract/json.ts';
import { preRegistered, type Plugin } from '../core/phase/plugin.ts';
import { StateCommand } from '../core/state/state-command.ts';
import { defineStateKey, type StateKey } from '../core/state/state-key.ts';
import { ContextMessages, type ContextMessage } from './loop-keys.ts';
import type { ClientContext } from './run-handle.ts';

/**
 * What a client shares with a run besides messages (seed 001 §7.1): the state keys its agent
 * declares (`AgentSpec.client_state`) — the client is shown those and may set those, nothing else,
 * so it can never write the runtime's keys or a plugin's (a `permission_policy` that would grant it
 * tool calls) — and its context, offered to the model.
 */

/** The state key of a client state name: thread-scoped JSON, replaced whole by each write. */
export const clientStateKey = (name: string): StateKey<JsonValue, JsonValue> =>
  defineStateKey<JsonValue, JsonValue>({ key: name, init: () => null, apply: (_s, u) => u, codec: JsonValueSchema });

/**
 * The plugin that registers the client state keys of every agent of a runtime: each agent of it
 * has all of them, so a handoff on a thread, or a thread that changes agents between runs, keeps
 * every key a page shares (an agent shows and lets a client set only its own, `client_state`), and
 * a name that is also a plugin's key is refused when the agent with that plugin resolves.
 */
export const CLIENT_STATE_PLUGIN = '__runtime.client_state';
const plugins = new WeakMap<ReadonlyMap<string, AgentSpec>, Plugin | undefined>();

export function clientStatePlugin(agents: ReadonlyMap<string, AgentSpec>): Plugin | undefined {
  if (plugins.has(agents)) return plugins.get(agents);
  const names = [...new Set([...agents.values()].flatMap((a) => a.client_state ?? []))].sort();
  const plugin =
    names.length === 0
      ? undefined
      : preRegistered({
          name: CLIENT_STATE_PLUGIN,
          register: (r) => {
            for (const name of names) r.registerKey(clientStateKey(name), { scope: 'thread' });
          },
        });
  plugins.set(agents, plugin);
  return plugin;
}

/** Why a client may not send `state` to a run of `spec`, naming the field at fault; undefined when it may. */
export function clientStateProblem(spec: AgentSpec, state: JsonValue): { readonly field: string; readonly message: string } | undefined {
  if (typeof state !== 'object' || state === null || Array.isArray(state))
    return { field: 'state', message: "state: a client's state is an object of the keys its agent shares" };
  const shared = spec.client_state ?? [];
  for (const key of Object.keys(state)) {
    if (shared.includes(key)) continue;
    const field = `state.${key}`;
    return {
      field,
      message: `${field}: agent '${spec.id}' shares no such key with its clients (client_state: ${shared.length === 0 ? 'none' : shared.join(', ')})`,
    };
  }
  return undefined;
}

/** The key under which a client's context is offered to the model (one system message, in each inference of the run). */
export const CLIENT_CONTEXT_KEY = 'client.context';

/** The client's context as the message the model reads. */
export function clientContextMessage(context: readonly ClientContext[]): ContextMessage {
  const lines = context.map((c) => `- ${c.description}: ${c.value}`);
  return {
    key: CLIENT_CONTEXT_KEY,
    role: 'system',
    content: `What the client says of its page:\n${lines.join('\n')}`,
    target: 'system',
    priority: 0,
    cooldown_turns: 0,
    persistent: true,
  };
}

/** The write that offers the client's context to each inference of the run. */
export const clientContextCommand = (context: readonly ClientContext[]): StateCommand =>
  StateCommand.empty().update(ContextMessages, { op: 'upsert', message: clientContextMessage(context), step: 0 });
