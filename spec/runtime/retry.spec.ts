import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { StreamPart } from '../../src/contract/stream.ts';
import { Messages } from '../../src/contract/message.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { CircuitBreaker } from '../../src/runtime/circuit-breaker.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { InferenceFailure, type LlmExecutor } from '../../src/runtime/llm.ts';
import { backoffMs, LlmRetryPolicySchema, retryingExecutor } from '../../src/runtime/retry.ts';

const drain = async (it: AsyncIterable<StreamPart>): Promise<StreamPart[]> => {
  const out: StreamPart[] = [];
  for await (const p of it) out.push(p);
  return out;
};

/** Fails `failures` times (before any part), then answers with its name. */
function flaky(name: string, failures: number, calls: string[]): LlmExecutor {
  let left = failures;
  return {
    name,
    stream: (req) =>
      (async function* () {
        calls.push(`${name}:${req.model}`);
        if (left-- > 0) throw new InferenceFailure({ code: 'provider', message: `${name} down` });
        yield { type: 'text_delta', delta: name } as StreamPart;
      })(),
  };
}

describe('LlmRetryPolicy (book: 配置 LlmRetryPolicy)', () => {
  it('defaults and rejects unknown fields', () => {
    expect(LlmRetryPolicySchema.parse({})).toEqual({ max_retries: 2, fallback_models: [], backoff_base_ms: 500 });
    expect(LlmRetryPolicySchema.safeParse({ retries: 1 }).success).toBe(false);
  });

  it('backoff doubles per attempt from the base, capped at 8 s; base 0 means no wait', () => {
    expect([0, 1, 2, 3, 4, 10].map((a) => backoffMs(500, a))).toEqual([500, 1000, 2000, 4000, 8000, 8000]);
    expect(backoffMs(0, 5)).toBe(0);
  });

  it('retries with exponential backoff through env.sleep, then falls back to the next model', async () => {
    const env = deterministicEnv({ start: 0 });
    const calls: string[] = [];
    const exec = retryingExecutor(
      [
        { modelName: 'primary', executor: flaky('A', 10, calls) },
        { modelName: 'backup', executor: flaky('B', 0, calls) },
      ],
      { max_retries: 2, fallback_models: ['backup'], backoff_base_ms: 100 },
      env,
    );
    const parts = await drain(exec.stream({ model: 'primary', messages: [], tools: [] }));
    expect(parts).toEqual([{ type: 'text_delta', delta: 'B' }]);
    expect(calls).toEqual(['A:primary', 'A:primary', 'A:primary', 'B:backup']);
    expect(env.clock.now()).toBe(100 + 200);
  });

  it('does not retry a cancelled inference, nor a failure after parts were yielded', async () => {
    const env = deterministicEnv();
    let n = 0;
    const midStream: LlmExecutor = {
      name: 'mid',
      stream: () =>
        (async function* () {
          n++;
          yield { type: 'text_delta', delta: 'partial' } as StreamPart;
          throw new InferenceFailure({ code: 'provider', message: 'dropped' });
        })(),
    };
    await expect(
      drain(
        retryingExecutor([{ modelName: 'm', executor: midStream }], { max_retries: 3, fallback_models: [], backoff_base_ms: 0 }, env).stream({
          model: 'm',
          messages: [],
          tools: [],
        }),
      ),
    ).rejects.toThrow('dropped');
    expect(n).toBe(1);
    const cancelled: LlmExecutor = {
      name: 'c',
      stream: () =>
        // biome-ignore lint/correctness/useYield: this stream fails before its first part, so it never yields
        (async function* () {
          n++;
          throw new InferenceFailure({ code: 'cancelled' });
        })(),
    };
    await expect(
      drain(
        retryingExecutor([{ modelName: 'm', executor: cancelled }], { max_retries: 3, fallback_models: [], backoff_base_ms: 0 }, env).stream({
          model: 'm',
          messages: [],
          tools: [],
        }),
      ),
    ).rejects.toThrow('cancelled');
    expect(n).toBe(2);
  });

  it('in a run, the fallback model that answered is reported in inference_complete', async () => {
    const primary = new ScriptedLlm([{ error: 'down' }, { error: 'down' }]);
    const backup = new ScriptedLlm([{ text: 'from backup' }]);
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('p1', primary)
      .withProvider('p2', backup)
      .withModel('main', { provider: 'p1', model_name: 'main-v1' })
      .withModel('spare', { provider: 'p2', model_name: 'spare-v1' })
      .withAgentSpec({ id: 'a', model: 'main', sections: { retry: { max_retries: 1, fallback_models: ['spare'], backoff_base_ms: 10 } } })
      .build();
    if (!built.ok) throw new Error('build');
    const sink = new VecEventSink();
    const r = await built.value.run({ messages: [Messages.user('hi')] }, sink);
    expect(r.ok && r.value.response).toBe('from backup');
    expect(sink.events.find((e) => e.event_type === 'inference_complete')).toMatchObject({ model: 'spare-v1' });
    // The failures the retry policy absorbed are in the run's result, in order.
    expect(r.ok && r.value.inferenceErrors).toEqual([
      { code: 'provider', message: 'down' },
      { code: 'provider', message: 'down' },
    ]);
  });

  it("a run's result lists every inference failure it saw: absorbed, counted as a failed step, or the one that ended it", async () => {
    const run = async (script: ConstructorParameters<typeof ScriptedLlm>[0], extra: Record<string, unknown>) => {
      const built = new AgentRuntimeBuilder()
        .withEnv(deterministicEnv())
        .withProvider('p', new ScriptedLlm(script))
        .withModel('m', { provider: 'p', model_name: 'm-v1' })
        .withAgentSpec({ id: 'a', model: 'm', ...extra })
        .build();
      if (!built.ok) throw new Error('build');
      const r = await built.value.run({ messages: [Messages.user('hi')] }, new VecEventSink());
      if (!r.ok) throw new Error('run');
      return r.value;
    };
    const ended = await run([{ error: 'first' }, { error: 'second' }], { sections: { retry: { max_retries: 1, fallback_models: [], backoff_base_ms: 0 } } });
    expect(ended.termination.type).toBe('error');
    expect(ended.inferenceErrors).toEqual([
      { code: 'provider', message: 'first' },
      { code: 'provider', message: 'second' },
    ]);
    const counted = await run([{ error: 'once' }, { text: 'fine' }], { stop_conditions: [{ type: 'consecutive_errors', max: 3 }] });
    expect(counted.response).toBe('fine');
    expect(counted.inferenceErrors).toEqual([{ code: 'provider', message: 'once' }]);
    expect((await run([{ text: 'fine' }], {})).inferenceErrors).toEqual([]);
  });
});

describe('CircuitBreaker (book: CircuitBreakerConfig; core-spec §11.4)', () => {
  it('opens after 5 consecutive failures, lets one probe through after 30 s, closes on success', () => {
    const env = deterministicEnv({ start: 0 });
    const cb = new CircuitBreaker(env.clock);
    for (let i = 0; i < 4; i++) cb.recordFailure('m');
    expect(cb.check('m')).toBe(true);
    cb.recordFailure('m');
    expect(cb.status('m')).toBe('open');
    expect(cb.check('m')).toBe(false);
    env.advance(29_999);
    expect(cb.check('m')).toBe(false);
    env.advance(1);
    expect(cb.check('m')).toBe(true);
    expect(cb.status('m')).toBe('half_open');
    expect(cb.check('m')).toBe(false);
    cb.recordSuccess('m');
    expect(cb.status('m')).toBe('closed');
    expect(cb.check('m')).toBe(true);
    expect(cb.check('other')).toBe(true);
    cb.recordSuccess('unknown');
    expect(cb.status('unknown')).toBe('closed');
  });

  it('a failed half-open probe opens it again for a full cooldown', () => {
    const env = deterministicEnv({ start: 0 });
    const cb = new CircuitBreaker(env.clock, { failure_threshold: 1, cooldown_ms: 100, half_open_max: 2 });
    cb.recordFailure('m');
    env.advance(100);
    expect(cb.check('m')).toBe(true);
    expect(cb.check('m')).toBe(true);
    expect(cb.check('m')).toBe(false);
    cb.recordFailure('m');
    expect(cb.status('m')).toBe('open');
    env.advance(99);
    expect(cb.check('m')).toBe(false);
  });

  it('property: against a reference model, on random outcomes and clock moves', () => {
    type Op = { kind: 'check' } | { kind: 'fail' } | { kind: 'ok' } | { kind: 'wait'; ms: number };
    const op = fc.oneof(
      fc.constant<Op>({ kind: 'check' }),
      fc.constant<Op>({ kind: 'fail' }),
      fc.constant<Op>({ kind: 'ok' }),
      fc.integer({ min: 0, max: 20 }).map((ms): Op => ({ kind: 'wait', ms })),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 15 }),
        fc.integer({ min: 1, max: 3 }),
        fc.array(op, { maxLength: 60 }),
        (threshold, cooldown, halfMax, ops) => {
          const env = deterministicEnv({ start: 0 });
          const cb = new CircuitBreaker(env.clock, { failure_threshold: threshold, cooldown_ms: cooldown, half_open_max: halfMax });
          let status: 'closed' | 'open' | 'half_open' = 'closed';
          let failures = 0;
          let last = 0;
          let probes = 0;
          let now = 0;
          for (const o of ops) {
            if (o.kind === 'wait') {
              env.advance(o.ms);
              now += o.ms;
            } else if (o.kind === 'ok') {
              cb.recordSuccess('m');
              if (failures > 0 || status !== 'closed') {
                status = 'closed';
                failures = 0;
                probes = 0;
              }
            } else if (o.kind === 'fail') {
              cb.recordFailure('m');
              failures++;
              last = now;
              if (status === 'half_open' || failures >= threshold) {
                status = 'open';
                probes = 0;
              }
            } else {
              let expected: boolean;
              if (status === 'closed') expected = true;
              else if (status === 'open') {
                expected = now - last >= cooldown;
                if (expected) {
                  status = 'half_open';
                  probes = 1;
                }
              } else {
                expected = probes < halfMax;
                if (expected) probes++;
              }
              expect(cb.check('m')).toBe(expected);
            }
            expect(cb.status('m')).toBe(status);
            expect(cb.isClosed('m')).toBe(status === 'closed');
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: the retrying executor against a reference of its loop — attempts, backoff, fallbacks, absorbed failures and the breaker — whether a stream fails when opened, on its first part, or not at all', async () => {
    type Outcome = 'ok' | 'throws' | 'rejects' | 'fatal';
    const outcome = fc.constantFrom<Outcome>('ok', 'throws', 'rejects', 'fatal');
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(outcome, { maxLength: 5 }), { minLength: 1, maxLength: 3 }),
        fc.integer({ min: 0, max: 3 }),
        fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
        fc.integer({ min: 1, max: 2 }),
        async (scripts, maxRetries, threshold, runs) => {
          const names = scripts.map((_, t) => `m${t}`);
          // The executor under test.
          const env = deterministicEnv({ start: 0 });
          const breaker = threshold === undefined ? undefined : new CircuitBreaker(env.clock, { failure_threshold: threshold, cooldown_ms: 1_000_000 });
          const calls: string[] = [];
          const absorbed: string[] = [];
          const answered: string[] = [];
          const left = scripts.map((s) => [...s]);
          const executor = (t: number): LlmExecutor => ({
            name: names[t] as string,
            stream: (req) => {
              calls.push(req.model);
              const o = left[t]?.shift() ?? 'ok';
              if (o === 'throws') throw new InferenceFailure({ code: 'provider', message: `${req.model} throws` });
              return (async function* () {
                if (o === 'rejects') throw new InferenceFailure({ code: 'provider', message: `${req.model} rejects` });
                if (o === 'fatal') throw new InferenceFailure({ code: 'cancelled' });
                yield { type: 'text_delta', delta: req.model } as StreamPart;
              })();
            },
          });
          const exec = retryingExecutor(
            names.map((modelName, t) => ({ modelName, executor: executor(t) })),
            { max_retries: maxRetries, fallback_models: names.slice(1), backoff_base_ms: 10 },
            env,
            breaker,
            { onModel: (m) => answered.push(m), onAbsorbed: (e) => absorbed.push(e.code === 'provider' ? e.message : e.code) },
          );
          const outcomes: string[] = [];
          for (let r = 0; r < runs; r++) {
            try {
              outcomes.push(
                `ok:${(await drain(exec.stream({ model: 'm0', messages: [], tools: [] }))).map((p) => (p.type === 'text_delta' ? p.delta : '')).join('')}`,
              );
            } catch (e) {
              outcomes.push(`failed:${e instanceof InferenceFailure ? (e.error.code === 'provider' ? e.error.message : e.error.code) : String(e)}`);
            }
          }

          // The reference: the loop as documented.
          const ref = { calls: [] as string[], absorbed: [] as string[], answered: [] as string[], outcomes: [] as string[], slept: 0 };
          const refLeft = scripts.map((s) => [...s]);
          const failures = new Map<string, number>();
          for (let r = 0; r < runs; r++) {
            let last: string | undefined;
            let result: string | undefined;
            search: for (let t = 0; t < names.length; t++) {
              const model = names[t] as string;
              for (let attempt = 0; attempt <= maxRetries; attempt++) {
                if (last !== undefined) {
                  ref.absorbed.push(last);
                  last = undefined;
                }
                if (threshold !== undefined && (failures.get(model) ?? 0) >= threshold) {
                  last = `circuit breaker open for model ${model}`;
                  break;
                }
                ref.calls.push(model);
                const o = refLeft[t]?.shift() ?? 'ok';
                if (o === 'ok') {
                  failures.set(model, 0);
                  ref.answered.push(model);
                  result = `ok:${model}`;
                  break search;
                }
                if (o === 'fatal') {
                  result = 'failed:cancelled';
                  break search;
                }
                failures.set(model, (failures.get(model) ?? 0) + 1);
                last = `${model} ${o}`;
                if (attempt < maxRetries) ref.slept += backoffMs(10, attempt);
              }
            }
            ref.outcomes.push(result ?? `failed:${last}`);
          }
          expect({ calls, absorbed, answered, outcomes, slept: env.clock.now() }).toEqual(ref);
          for (const m of names) expect(breaker?.isClosed(m) ?? true).toBe(threshold === undefined || (failures.get(m) ?? 0) < threshold);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('an open breaker fails inference at once without calling the provider', async () => {
    const env = deterministicEnv({ start: 0 });
    const cb = new CircuitBreaker(env.clock, { failure_threshold: 1 });
    const calls: string[] = [];
    const exec = retryingExecutor([{ modelName: 'm', executor: flaky('A', 5, calls) }], { max_retries: 0, fallback_models: [], backoff_base_ms: 0 }, env, cb);
    await expect(drain(exec.stream({ model: 'm', messages: [], tools: [] }))).rejects.toThrow('A down');
    await expect(drain(exec.stream({ model: 'm', messages: [], tools: [] }))).rejects.toThrow('circuit breaker open for model m');
    expect(calls).toEqual(['A:m']);
  });
});
