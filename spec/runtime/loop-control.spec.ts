import { describe, expect, it } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { ContinueRun, ToolInterceptAction } from '../../src/runtime/builtin-plugins.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { echoTool, harness, types } from '../support/runtime.ts';

/** Asks to continue after every answer, `times` times in a run (counted in the hook's closure: per harness). */
const keepGoing = (times: number): RuntimePlugin => {
  let asked = 0;
  return {
    name: 'keep-going',
    register: (r) =>
      r.registerPhaseHook('after_inference', (ctx) => {
        const cmd = StateCommand.empty();
        if (ctx.input.inference.ok && ctx.input.inference.toolNames.length === 0 && asked < times) {
          asked += 1;
          cmd.scheduleAction(ContinueRun, 'not done yet');
        }
        return cmd;
      }),
  };
};

describe('ContinueRun: a plugin keeps a run going past a natural end', () => {
  it('each answer it continues is followed by another step; then the run ends naturally', async () => {
    const h = harness([{ text: 'one' }, { text: 'two' }, { text: 'three' }], { plugins: [keepGoing(2)] });
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(r.ok && r.value).toMatchObject({ steps: 3, response: 'three', termination: { type: 'natural_end' } });
    expect(h.llm.requests).toHaveLength(3);
    expect(types(h.sink.events).filter((t) => t === 'step_start')).toHaveLength(3);
    expect(checkRunInvariants(h.sink.events)).toEqual([]);
  });

  it('is bounded by max_rounds like any step', async () => {
    const h = harness([{ text: 'a' }, { text: 'b' }, { text: 'c' }, { text: 'd' }], { plugins: [keepGoing(100)], spec: { max_rounds: 2 } });
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(r.ok && r.value.termination).toMatchObject({ type: 'stopped', value: { code: 'max_rounds' } });
  });

  it('asked in a step that does not end naturally, it is dropped at that step’s end: the next answer ends the run', async () => {
    const always: RuntimePlugin = {
      name: 'ask-on-tools',
      register: (r) =>
        r.registerPhaseHook('after_inference', (ctx) =>
          ctx.input.inference.ok && ctx.input.inference.toolNames.length > 0 ? StateCommand.empty().scheduleAction(ContinueRun, 'tools') : StateCommand.empty(),
        ),
    };
    const h = harness([{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }, { text: 'never' }], { plugins: [always] });
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(r.ok && r.value).toMatchObject({ steps: 2, response: 'done', termination: { type: 'natural_end' } });
  });
});

describe('intercept ranks: block > a refusal > suspend > set_result', () => {
  const gate = (name: string, intercept: unknown): RuntimePlugin => ({
    name,
    register: (r) =>
      r.registerPhaseHook('before_tool_execute', (ctx) =>
        StateCommand.empty().scheduleAction(ToolInterceptAction, { call_id: ctx.input.toolCall.id, intercept: intercept as never }),
      ),
  });
  const ticket = {
    suspension: { id: 's1', action: 'confirm' },
    pending: { id: 'c1', name: 'echo', arguments: { text: 'x' } },
    resume_mode: 'replay_tool_call',
  };
  const script = [{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'after' }];

  it('a refusal (an error result marked rejected) outranks a suspension: the call does not run, the model is told, the run goes on', async () => {
    const refusal = { ...ToolResults.error('echo', 'Read it first.'), metadata: { rejected: true } };
    const h = harness(script, {
      tools: [echoTool],
      plugins: [gate('asks', { type: 'suspend', ticket }), gate('refuses', { type: 'set_result', result: refusal })],
    });
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    const done = h.sink.events.find((e) => e.event_type === 'tool_call_done');
    expect(done).toMatchObject({ result: { status: 'error', message: 'Read it first.' } });
  });

  it('a plain set_result does not: the suspension wins', async () => {
    const h = harness(script, {
      tools: [echoTool],
      plugins: [gate('asks', { type: 'suspend', ticket }), gate('answers', { type: 'set_result', result: ToolResults.success('echo', 'cached') })],
    });
    const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink, { waitForDecisions: false });
    expect(r.ok && r.value.termination.type).toBe('suspended');
  });
});
