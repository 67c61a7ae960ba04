import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { AgentEvent } from '../src/contract/event.ts';
import { ToolResults } from '../src/contract/tool.ts';
import { defineTool } from '../src/runtime/tool.ts';
import { serialiseEvent } from '../src/contract/event.ts';
import { Messages } from '../src/contract/message.ts';
import { ScriptedLlm } from '../src/providers/scripted.ts';
import { AgentRuntimeBuilder, type AgentRuntime } from '../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../src/runtime/env.ts';
import { VecEventSink } from '../src/runtime/event-sink.ts';
import type { LlmExecutor } from '../src/runtime/llm.ts';
import type { Store } from '../src/runtime/store.ts';
import { MemoryThreadRunStore } from '../src/runtime/thread-run-store.ts';
import { createHttpApp } from '../src/server/http.ts';
import { sseOf } from '../src/server/http-support.ts';
import { listen, type RunningServer } from '../src/server/node.ts';
import { RunRegistry, ThreadLog } from '../src/server/run-registry.ts';
import { MemoryStore } from '../src/stores/memory.ts';
import { SqliteStore } from '../src/stores/sqlite.ts';
import type { Suite } from './harness.ts';

const FRAMES = 1000;
const events: AgentEvent[] = Array.from({ length: FRAMES }, (_, i) => ({ event_type: 'text_delta', delta: `token ${i} ` }));

/** One thread log fanning 1,000 frames out to `n` subscribers, each framing and encoding as an SSE response does. */
function fanOutSuite(n: number): Suite {
  const encoder = new TextEncoder();
  return {
    name: `sse-fanout-${n}`,
    description: `1,000 frames appended to a thread log with ${n} subscriber(s), each writing id:/data: frames as bytes; baseline: JSON per event per subscriber`,
    units: { name: 'frame', count: FRAMES * n },
    cases: [
      {
        name: 'awaken ThreadLog+SSE',
        role: 'subject',
        fn: () => {
          const log = new ThreadLog(1024);
          let bytes = 0;
          for (let s = 0; s < n; s++)
            log.subscribe(
              undefined,
              (item) => void (bytes += encoder.encode(sseOf(item)).length),
              () => ({ kind: 'resync', seq: 0, messages: [] }),
            );
          for (const e of events) log.append('run', e);
          return bytes;
        },
      },
      {
        name: 'baseline stringify',
        role: 'baseline',
        fn: () => {
          let bytes = 0;
          for (const e of events) {
            const data = serialiseEvent(e);
            for (let s = 0; s < n; s++) bytes += encoder.encode(`data: ${data}\n\n`).length;
          }
          return bytes;
        },
      },
    ],
  };
}

/** The scripted conversation of every run: one tool call, then the answer. */
const model = (): LlmExecutor =>
  new ScriptedLlm(
    Array.from({ length: 100_000 }, (_, i) => (i % 2 === 0 ? { tool_calls: [{ id: `c${i}`, name: 'echo', arguments: { text: 'x' } }] } : { text: 'done' })),
  );

function runtimeOn(store: Store | MemoryThreadRunStore): AgentRuntime {
  const builder = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('m', model())
    .withModel('m', { provider: 'm', model_name: 'm' })
    .withThreadRunStore(store)
    .withAgentSpec({ id: 'a', model: 'm' })
    .withTool(ECHO);
  const built = builder.build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return built.value;
}

const ECHO = defineTool({
  id: 'echo',
  description: 'echo',
  args: z.object({ text: z.string() }),
  execute: ({ text }) => ToolResults.success('echo', { echoed: text }),
});

/** 100 threads, one two-step run each, through the registry on a store; baseline: runtime.run on the in-memory loop store. */
function runsSuite(kind: 'memory' | 'sqlite'): Suite {
  const store: Store = kind === 'memory' ? new MemoryStore() : new SqliteStore(join(mkdtempSync(join(tmpdir(), 'awaken-bench-')), 'bench.db'));
  const registry = new RunRegistry(runtimeOn(store), store);
  const plain = runtimeOn(new MemoryThreadRunStore());
  let round = 0;
  return {
    name: `runs-100-threads-${kind}`,
    description: `100 threads × one run (a tool call, then the answer) through the run registry on the ${kind} store; baseline: runtime.run with the loop's in-memory store`,
    units: { name: 'run', count: 100 },
    cases: [
      {
        name: `awaken registry+${kind}`,
        role: 'subject',
        fn: async () => {
          round++;
          const started = await Promise.all(
            Array.from({ length: 100 }, (_, i) => registry.start({ threadId: `t${round}-${i}`, messages: [Messages.user('go', { id: `m${round}-${i}` })] })),
          );
          await Promise.all(started.map((s) => (s.ok ? s.value.done : undefined)));
        },
      },
      {
        name: 'baseline runtime.run',
        role: 'baseline',
        fn: async () => {
          round++;
          await Promise.all(
            Array.from({ length: 100 }, (_, i) => plain.run({ threadId: `b${round}-${i}`, messages: [Messages.user('go')] }, new VecEventSink())),
          );
        },
      },
    ],
  };
}

/** A model streaming `deltas` text deltas in one answer. */
const chatty = (deltas: number): LlmExecutor => ({
  name: 'chatty',
  stream: () =>
    (async function* () {
      for (let i = 0; i < deltas; i++) yield { type: 'text_delta' as const, delta: `t${i} ` };
      yield { type: 'finish' as const, stop_reason: 'EndTurn' as const };
    })(),
});

/**
 * Over real sockets: one run of 1,000 text deltas on a thread that `n` HTTP clients follow
 * (`GET /v1/threads/:id/stream`), each reading to the terminal frame; baseline: the same run with
 * nobody following.
 */
function httpFanOutSuite(n: number): Suite {
  const store = new MemoryStore();
  const built = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('m', chatty(FRAMES))
    .withModel('m', { provider: 'm', model_name: 'm' })
    .withThreadRunStore(store)
    .withAgentSpec({ id: 'a', model: 'm' })
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  const registry = new RunRegistry(built.value, store);
  const app = createHttpApp({ runtime: built.value, store, registry });
  let server: RunningServer | undefined;
  let round = 0;
  const follow = async (url: string): Promise<number> => {
    const r = await fetch(url);
    const reader = (r.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      text += decoder.decode(next.value, { stream: true });
      if (text.includes('"event_type":"run_finish"')) break;
    }
    await reader.cancel();
    return text.length;
  };
  return {
    name: `sse-http-${n}`,
    description: `a 1,000-delta run followed over HTTP by ${n} client(s) on real sockets; baseline: the same run unfollowed`,
    units: { name: 'frame', count: (FRAMES + 10) * n },
    setup: async () => {
      server = await listen(app, { port: 0 });
    },
    teardown: async () => {
      await server?.close();
    },
    cases: [
      {
        name: `awaken ${n} HTTP followers`,
        role: 'subject',
        fn: async () => {
          const thread = `f${++round}`;
          const url = `${server?.url}/v1/threads/${thread}/stream?since=0`;
          const readers = Array.from({ length: n }, () => follow(url));
          const started = await registry.start({ threadId: thread, messages: [Messages.user('go', { id: `m${round}` })] });
          if (started.ok) await started.value.done;
          await Promise.all(readers);
        },
      },
      {
        name: 'baseline unfollowed run',
        role: 'baseline',
        fn: async () => {
          const started = await registry.start({ threadId: `b${++round}`, messages: [Messages.user('go', { id: `m${round}` })] });
          if (started.ok) await started.value.done;
        },
      },
    ],
  };
}

export const serverSuites = (): Suite[] => [fanOutSuite(1), fanOutSuite(50), httpFanOutSuite(1), httpFanOutSuite(50), runsSuite('memory'), runsSuite('sqlite')];
