import type { AgentSpecInput } from '../../src/contract/agent-spec.ts';
import { z } from 'zod';
import type { JsonValue } from '../../src/contract/json.ts';
import { ToolResults, type Schedule, type ToolCallResume } from '../../src/contract/tool.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { clientStateKey } from '../../src/runtime/client-state.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder, type AgentRuntime } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv, type Env } from '../../src/runtime/env.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { createHttpApp, type HttpOptions } from '../../src/server/http.ts';
import { Mailbox } from '../../src/server/mailbox.ts';
import { listen } from '../../src/server/node.ts';
import { RunRegistry, type RegistryOptions } from '../../src/server/run-registry.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import type { Store } from '../../src/runtime/store.ts';
import { approvalTool, echoTool } from './runtime.ts';

/** A tool that waits until the test opens its gate (a run held in flight), then records a side effect. */
export function gatedTool() {
  let open: () => void = () => undefined;
  let gate = new Promise<void>((r) => (open = r));
  const effects: string[] = [];
  const started: string[] = [];
  /** The calls whose run was cancelled while they waited (their signal aborted). */
  const aborted: string[] = [];
  const tool = defineTool({
    id: 'slow',
    description: 'Waits for the gate',
    args: z.object({ tag: z.string() }),
    execute: async ({ tag }, ctx) => {
      started.push(tag);
      ctx.signal.addEventListener('abort', () => aborted.push(tag), { once: true });
      await gate;
      effects.push(tag);
      return ToolResults.success('slow', { tag });
    },
  });
  return {
    tool,
    effects,
    started,
    aborted,
    open: () => open(),
    reset: () => {
      gate = new Promise<void>((r) => (open = r));
    },
  };
}

export interface TestServer {
  readonly app: ReturnType<typeof createHttpApp>;
  readonly runtime: AgentRuntime;
  readonly registry: RunRegistry;
  readonly store: Store;
  readonly llm: ScriptedLlm;
}

export function testServer(
  script: readonly ScriptStep[],
  options: {
    readonly store?: Store;
    readonly registry?: RegistryOptions;
    readonly http?: HttpOptions;
    readonly tools?: readonly ReturnType<typeof defineTool>[];
    /** Fields of the first agent (`agent`) beside its id, model and prompt. */
    readonly spec?: Partial<AgentSpecInput>;
    /** More agents beside `agent`, on the same model (`m`) and tools. */
    readonly agents?: readonly AgentSpecInput[];
    readonly env?: Env;
    /** Whether the scripted model keeps every request in `llm.requests` (default true; false where memory is measured). */
    readonly recordRequests?: boolean;
  } = {},
): TestServer {
  const llm = new ScriptedLlm(script, { record: options.recordRequests ?? true });
  const store = options.store ?? new MemoryStore();
  const builder = new AgentRuntimeBuilder()
    .withEnv(options.env ?? deterministicEnv())
    .withProvider('scripted', llm)
    .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
    .withThreadRunStore(store)
    .withAgentSpec({ id: 'agent', model: 'm', system_prompt: 'be brief', ...options.spec });
  for (const agent of options.agents ?? []) builder.withAgentSpec(agent);
  for (const t of options.tools ?? [echoTool, approvalTool]) builder.withTool(t);
  const built = builder.build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  const registry = new RunRegistry(built.value, store, options.registry);
  return { app: createHttpApp({ runtime: built.value, store, registry }, options.http), runtime: built.value, registry, store, llm };
}

export interface SseFrame {
  readonly id?: string;
  readonly event?: string;
  readonly data: string;
}

/** Parses SSE text into frames (comments dropped). */
export function parseSse(text: string): SseFrame[] {
  const frames: SseFrame[] = [];
  for (const block of text.split('\n\n')) {
    if (block.trim() === '') continue;
    let id: string | undefined;
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    if (data.length > 0) frames.push({ ...(id !== undefined ? { id } : {}), ...(event !== undefined ? { event } : {}), data: data.join('\n') });
  }
  return frames;
}

export const eventTypes = (frames: readonly SseFrame[]): string[] =>
  frames.map((f) => (JSON.parse(f.data) as { event_type?: string }).event_type ?? f.event ?? '?');

export const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** Reads an SSE response until `done` says so (or the time runs out), then cancels it. */
export async function readFrames(response: Response, done: (frames: readonly SseFrame[]) => boolean, timeoutMs = 5000): Promise<SseFrame[]> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  const deadline = Date.now() + timeoutMs;
  try {
    while (Date.now() < deadline) {
      const next = await Promise.race([reader.read(), new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), Math.max(1, deadline - Date.now())))]);
      if (next === 'timeout' || next.done === true) break;
      text += decoder.decode(next.value, { stream: true });
      const complete = text.slice(0, text.lastIndexOf('\n\n') + 2);
      if (done(parseSse(complete))) return parseSse(complete);
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return parseSse(text);
}

/** The JSON body of a response, untyped (specs look into it). */
// biome-ignore lint/suspicious/noExplicitAny: specs read bodies of many shapes at any depth (146 reads in 19 files); a wrong read fails the assertion that makes it
export const bodyJson = async (r: Response | Promise<Response>): Promise<any> => (await r).json();

/** Alice's and Bob's API tokens, for the specs that try a surface with two principals. */
export const ALICE_TOKEN = 'alice-token-0123456789';
export const BOB_TOKEN = 'bob-token-0123456789';

/**
 * `s` served over a socket with a mailbox and the two principals' tokens: `call(token, method,
 * path, body?)` as that principal; `url` where it listens; `close` when done.
 */
export async function twoPrincipals(s: TestServer): Promise<{
  readonly mailbox: Mailbox;
  readonly call: (token: string, method: string, path: string, body?: unknown) => Promise<Response>;
  readonly close: () => Promise<void>;
  readonly url: string;
}> {
  const mailbox = new Mailbox(s.store, s.registry, s.runtime.env);
  const tokens = new Map([
    [ALICE_TOKEN, 'alice'],
    [BOB_TOKEN, 'bob'],
  ]);
  const server = await listen(createHttpApp({ runtime: s.runtime, store: s.store, registry: s.registry, mailbox }, { auth: { tokens } }), { port: 0 });
  const call = (token: string, method: string, path: string, body?: unknown): Promise<Response> =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  return { mailbox, call, close: () => server.close(), url: server.url };
}

/**
 * `later {job}`: its first call is parked by its gate until `when` (`ToolResults.scheduled`); woken,
 * it writes down what `seen` makes of the decision in `ran` and succeeds.
 */
export function laterTool(when: Schedule, ran: unknown[], seen: (decision: ToolCallResume) => unknown = (d) => d.result ?? null) {
  return defineTool({
    id: 'later',
    description: 'Does its work at a scheduled time',
    args: z.object({ job: z.string() }),
    execute: (args, ctx) => {
      if (ctx.resume === undefined) return ToolResults.scheduled({ id: ctx.callId, name: 'later', arguments: args }, when);
      ran.push(seen(ctx.resume.decision));
      return ToolResults.success('later', { done: args.job });
    },
  });
}

/** Reads an SSE response for a while (or to its end): its text, and whether it ended. */
export async function readFor(r: Response, ms: number): Promise<{ text: string; ended: boolean }> {
  const reader = (r.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  const deadline = Date.now() + ms;
  for (;;) {
    const next = await Promise.race([reader.read(), new Promise<'late'>((res) => setTimeout(() => res('late'), Math.max(1, deadline - Date.now())))]);
    if (next === 'late' || next.done) {
      await reader.cancel().catch(() => undefined);
      return { text, ended: next !== 'late' };
    }
    text += decoder.decode(next.value, { stream: true });
  }
}

/** `add_todo {item}`: adds an item to the state key `todos` an agent shares with its clients, and says what it saw there. */
export const addTodoTool = defineTool({
  id: 'add_todo',
  description: 'adds an item to the list the page shows',
  args: z.object({ item: z.string() }),
  execute: (args, ctx) => {
    const Todos = clientStateKey('todos');
    const before = (ctx.state(Todos) ?? []) as JsonValue[];
    return { result: ToolResults.success('add_todo', { saw: before }), command: StateCommand.empty().update(Todos, [...before, args.item]) };
  },
});
