import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import type { StreamPart } from '../../src/contract/stream.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import type { InferenceRequest, LlmExecutor } from '../../src/runtime/llm.ts';
import { RunSignal } from '../../src/runtime/run-signal.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { z } from 'zod';

describe('RunSignal', () => {
  it('is a flag until asked for its signal; its listener hears the abort once', () => {
    const heard: string[] = [];
    const s = new RunSignal();
    s.listen(() => heard.push('run'));
    expect(s.aborted).toBe(false);
    s.abort();
    s.abort();
    expect(s.aborted).toBe(true);
    expect(heard).toEqual(['run']);
  });

  it('a signal asked for after the abort is already aborted, and the listener is not told again', () => {
    const heard: string[] = [];
    const s = new RunSignal();
    s.listen(() => heard.push('run'));
    s.abort();
    const signal = s.signal;
    expect(signal.aborted).toBe(true);
    expect(s.signal).toBe(signal);
    expect(heard).toEqual(['run']);
  });

  it('a signal asked for before the abort aborts with it, the run hearing first, as the first listener would', () => {
    const heard: string[] = [];
    const s = new RunSignal();
    s.listen(() => heard.push(`run, signal aborted: ${s.signal.aborted}`));
    s.signal.addEventListener('abort', () => heard.push('provider'));
    s.abort();
    expect(heard).toEqual(['run, signal aborted: true', 'provider']);
  });

  it('released before its signal is asked for, the signal it makes has no listener of its own', () => {
    const s = new RunSignal();
    s.listen(() => undefined);
    s.release();
    expect(getEventListeners(s.signal, 'abort')).toEqual([]);
  });

  it('released, it tells its listener nothing and leaves no listener of its own on the signal', () => {
    const heard: string[] = [];
    const s = new RunSignal();
    s.listen(() => heard.push('run'));
    const signal = s.signal;
    s.release();
    expect(getEventListeners(signal, 'abort')).toEqual([]);
    s.abort();
    expect(signal.aborted).toBe(true);
    expect(heard).toEqual([]);
  });
});

describe('a run makes an AbortController only when something asks for its signal', () => {
  const Original = globalThis.AbortController;
  let made = 0;
  const counting = (): void => {
    made = 0;
    globalThis.AbortController = class extends Original {
      constructor() {
        super();
        made++;
      }
    };
  };
  afterEach(() => {
    globalThis.AbortController = Original;
  });

  const parts = (k: number): StreamPart[] =>
    k < 2
      ? [
          { type: 'tool_call_start', id: `c${k}`, name: 'echo' },
          { type: 'tool_call_delta', id: `c${k}`, args_delta: '{"text":"x"}' },
          { type: 'finish', stop_reason: 'ToolUse' },
        ]
      : [
          { type: 'text_delta', delta: 'done' },
          { type: 'finish', stop_reason: 'EndTurn' },
        ];

  function runtime(stream: LlmExecutor['stream'], readsSignal: boolean) {
    const echo = defineTool({
      id: 'echo',
      description: 'echo',
      args: z.object({ text: z.string() }),
      execute: ({ text }, ctx) =>
        ToolResults.success('echo', { echoed: text, ...(readsSignal ? { aborted: ctx.signal.aborted, cancellation: 'cancellation' in ctx } : {}) }),
    });
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('p', { name: 'p', stream })
      .withModel('m', { provider: 'p', model_name: 'p' })
      .withAgentSpec({ id: 'a', model: 'm' })
      .withTool(echo)
      .build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    return built.value;
  }

  it('a run whose model and tools never ask makes none', async () => {
    let k = 0;
    const rt = runtime(() => {
      const mine = parts(k++);
      return (async function* () {
        yield* mine;
      })();
    }, false);
    counting();
    const r = await rt.run({ messages: [Messages.user('go')] }, { emit: () => undefined });
    expect(r.ok && r.value.steps).toBe(3);
    expect(made).toBe(0);
  });

  it('a run whose model and tools ask makes one, handed to each, and it aborts when the run is cancelled', async () => {
    const signals = new Set<AbortSignal>();
    let k = 0;
    let cancel: () => void = () => undefined;
    const rt = runtime((request) => {
      const signal = request.signal as AbortSignal;
      signals.add(signal);
      const mine = parts(k++);
      return (async function* () {
        if (k === 3) {
          // The provider listens to the signal: it stops when the run is cancelled.
          const stopped = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
          cancel();
          await stopped;
          return;
        }
        yield* mine;
      })();
    }, true);
    counting();
    const events: AgentEvent[] = [];
    const started = await rt.start({ messages: [Messages.user('go')] }, { emit: (e) => void events.push(e) });
    if (!started.ok) throw new Error('not started');
    cancel = () => started.value.cancel();
    const result = await started.value.done;
    expect(result.termination).toEqual({ type: 'cancelled' });
    expect(made).toBe(1);
    expect(signals.size).toBe(1);
    const [signal] = [...signals] as [AbortSignal];
    expect(signal.aborted).toBe(true);
    const echoed = events.filter((e) => e.event_type === 'tool_call_done').map((e) => (e as { result: { data: unknown } }).result.data);
    // The run's own cancellation is not a tool's to reach (it could take the run's listener).
    expect(echoed).toEqual([
      { echoed: 'x', aborted: false, cancellation: false },
      { echoed: 'x', aborted: false, cancellation: false },
    ]);
  });
});

describe('every copy of a request carries the run signal', () => {
  /**
   * Runs the agent `builder` makes around the stream it is given — a provider that waits until the
   * run is cancelled, cancelling it once the caller holds the handle — and answers the signal the
   * provider was handed, once the run ended cancelled.
   */
  async function handedWhenCancelled(builder: (stream: LlmExecutor['stream']) => AgentRuntimeBuilder): Promise<AbortSignal | undefined> {
    let handedOn: AbortSignal | undefined;
    let cancel: () => void = () => undefined;
    const built = builder((request) => {
      handedOn = request.signal;
      return (async function* (): AsyncGenerator<StreamPart> {
        const signal = request.signal;
        if (signal === undefined) return;
        const stopped = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        await new Promise((resolve) => setImmediate(resolve));
        cancel();
        await stopped;
      })();
    }).build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    const started = await built.value.start({ messages: [Messages.user('go')] }, { emit: () => undefined });
    if (!started.ok) throw new Error('not started');
    cancel = () => started.value.cancel();
    expect((await started.value.done).termination).toEqual({ type: 'cancelled' });
    return handedOn;
  }

  const over = (stream: LlmExecutor['stream']): AgentRuntimeBuilder =>
    new AgentRuntimeBuilder().withEnv(deterministicEnv()).withProvider('p', { name: 'p', stream }).withModel('m', { provider: 'p', model_name: 'p' });

  it("a request transform's spread copy", async () => {
    const handedOn = await handedWhenCancelled((stream) =>
      over(stream)
        .withPlugin('copies', {
          name: 'copies',
          register: (r) => r.registerRequestTransform<{ messages: readonly unknown[] }>((q) => ({ ...q, messages: [...q.messages] })),
        })
        .withAgentSpec({ id: 'a', model: 'm', plugin_ids: ['copies'] }),
    );
    expect(handedOn).toBeInstanceOf(AbortSignal);
    expect(handedOn?.aborted).toBe(true);
  });

  it('a transform after one that spread the request sees the signal', async () => {
    let seenByLater: unknown;
    const handedOn = await handedWhenCancelled((stream) =>
      over(stream)
        .withPlugin('copies', { name: 'copies', register: (r) => r.registerRequestTransform<object>((q) => ({ ...q })) })
        .withPlugin('reads', {
          name: 'reads',
          register: (r) =>
            r.registerRequestTransform<{ signal?: AbortSignal }>((q) => {
              seenByLater = q.signal;
              return q;
            }),
        })
        .withAgentSpec({ id: 'a', model: 'm', plugin_ids: ['copies', 'reads'] }),
    );
    expect(seenByLater).toBeInstanceOf(AbortSignal);
    expect(seenByLater).toBe(handedOn);
  });

  it('the request the loop makes: its own keys are its data (no `overrides` when it has none), and a wrapper reads its signal', async () => {
    const requests: InferenceRequest[] = [];
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('p', {
        name: 'p',
        stream: (request) => {
          requests.push(request);
          return (async function* (): AsyncGenerator<StreamPart> {
            yield { type: 'text_delta', delta: 'ok' };
          })();
        },
      })
      .withModel('m', { provider: 'p', model_name: 'p' })
      .withAgentSpec({ id: 'a', model: 'm' })
      .build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    await built.value.run({ messages: [Messages.user('go')] }, { emit: () => undefined });
    const [request] = requests as [InferenceRequest];
    expect(Object.keys(request)).toEqual(['model', 'messages', 'tools', 'threadId']);
    expect(JSON.parse(JSON.stringify(request))).toEqual({
      model: 'p',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }],
      tools: [],
      threadId: expect.any(String),
    });
    const wrapped = Object.create(request) as InferenceRequest;
    expect(wrapped.signal).toBeInstanceOf(AbortSignal);
    expect(wrapped.signal).toBe(request.signal);
  });

  it("a fallback model's request", async () => {
    const handedOn = await handedWhenCancelled((stream) =>
      new AgentRuntimeBuilder()
        .withEnv(deterministicEnv())
        .withProvider('down', {
          name: 'down',
          stream: () =>
            (async function* (): AsyncGenerator<StreamPart> {
              yield* [];
              throw new Error('down');
            })(),
        })
        .withProvider('spare', { name: 'spare', stream })
        .withModel('main', { provider: 'down', model_name: 'main' })
        .withModel('backup', { provider: 'spare', model_name: 'backup' })
        .withAgentSpec({ id: 'a', model: 'main', sections: { retry: { max_retries: 0, fallback_models: ['backup'], backoff_base_ms: 0 } } }),
    );
    expect(handedOn).toBeInstanceOf(AbortSignal);
    expect(handedOn?.aborted).toBe(true);
  });
});
