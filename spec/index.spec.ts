import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineStateKey, serialiseEvent, StateCommand } from 'awaken-ts';
import { arbitraries } from 'awaken-ts/testing';
// The phase engine is machinery: `awaken-ts/unstable`.
import { PhaseRuntime } from 'awaken-ts/unstable';

describe('package exports', () => {
  it('runs the README phase-engine example: the state API from ".", PhaseRuntime from "./unstable"', async () => {
    const Visits = defineStateKey({
      key: 'demo.visits',
      merge: 'commutative',
      init: () => 0,
      apply: (n: number, by: number) => n + by,
      codec: z.number(),
    });
    const created = PhaseRuntime.create([
      {
        name: 'demo',
        register: (r) => r.registerKey(Visits).registerPhaseHook('step_start', () => StateCommand.empty().update(Visits, 1)),
      },
    ]);
    if (!created.ok) throw new Error(created.error.code);
    const report = await created.value.runPhase('step_start');
    expect(report.ok && report.value.commits).toBe(1);
    expect(created.value.store.snapshot().get(Visits)).toBe(1);
  });

  it('exposes the arbitraries through "./testing"', () => {
    const [event] = fc.sample(arbitraries.agentEvent(), { numRuns: 1, seed: 7 });
    expect(typeof serialiseEvent(event!)).toBe('string');
  });

  it('exposes the four jobs\' tools through "./testing" and "./judges": the fuzz kit, the agent bench, record and replay, the judges and their drivers', async () => {
    const testing = await import('awaken-ts/testing');
    expect([testing.checkStateKeyLaws, testing.fuzzPlugin, testing.benchAgent, testing.recordRun, testing.replayTranscript].map((f) => typeof f)).toEqual(
      Array(5).fill('function'),
    );
    const judges = await import('awaken-ts/judges');
    expect(
      [
        judges.judgeAiSdkTurns,
        judges.judgeAgUiTurns,
        judges.judgeA2aTurns,
        judges.judgeMcpTurns,
        judges.judgeAcpTurns,
        judges.driveAiSdk,
        judges.driveAcp,
        judges.renderReport,
      ].map((f) => typeof f),
    ).toEqual(Array(8).fill('function'));
  });
});

describe('README: running an agent', () => {
  it('runs the README agent example through the package exports', async () => {
    const { AgentRuntimeBuilder, Messages, ToolResults, VecEventSink, defineTool } = await import('awaken-ts');
    const { ScriptedLlm } = await import('awaken-ts/testing');
    const echo = defineTool({
      id: 'echo',
      description: 'Echo input back',
      args: z.object({ text: z.string() }),
      execute: ({ text }) => ToolResults.success('echo', { echoed: text }),
    });
    const built = new AgentRuntimeBuilder()
      .withAgentSpec({ id: 'assistant', model: 'm', system_prompt: 'Use the echo tool.', max_rounds: 5 })
      .withTool(echo)
      .withProvider('scripted', new ScriptedLlm([{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'hello' } }] }, { text: 'I said hello.' }]))
      .withModel('m', { provider: 'scripted', model_name: 'scripted' })
      .build();
    if (!built.ok) throw new Error(built.error.code);
    const sink = new VecEventSink();
    const result = await built.value.run({ messages: [Messages.user('Say hello with echo')] }, sink);
    expect(result.ok && result.value).toMatchObject({ response: 'I said hello.', steps: 2, termination: { type: 'natural_end' } });
  });

  it('exposes deferred tools and profiles through ".", context arithmetic through "./unstable"', async () => {
    const pkg = await import('awaken-ts');
    const unstable = await import('awaken-ts/unstable');
    expect(typeof unstable.truncateMessages).toBe('function');
    expect(typeof unstable.betaQuantile).toBe('function');
    expect(pkg.deferredToolsPlugin().name).toBe('deferred-tools');
    expect(await new pkg.MemoryProfileStore().read('a', 'k')).toBeUndefined();
  });

  it('exposes the server and the stores through "./server" and "./stores"', async () => {
    const server = await import('awaken-ts/server');
    const stores = await import('awaken-ts/stores');
    expect(typeof server.createHttpApp).toBe('function');
    expect(typeof server.RunRegistry).toBe('function');
    expect(new stores.MemoryStore().kind).toBe('memory');
    expect(typeof stores.openStore('memory')).toBe('object');
  });
});
