import { describe, expect, it } from 'vitest';
import type { AgentSpecInput } from '../../src/contract/agent-spec.ts';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages, messageText, type Message } from '../../src/contract/message.ts';
import { CONTINUATION_PROMPT, summaryText, DEFAULT_SUMMARIZER_SYSTEM_PROMPT } from '../../src/core/context/index.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { COMPACTION_PLUGIN, CONTEXT_TRANSFORM_PLUGIN, type Summarizer } from '../../src/runtime/context.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { MemoryThreadRunStore } from '../../src/runtime/thread-run-store.ts';
import { echoTool, types } from '../support/runtime.ts';

interface Setup {
  readonly script: readonly ScriptStep[];
  readonly spec?: Partial<AgentSpecInput>;
  readonly summarizer?: Summarizer;
  readonly model?: { readonly context_window?: number; readonly max_output_tokens?: number };
}

function build(setup: Setup) {
  const llm = new ScriptedLlm(setup.script);
  const store = new MemoryThreadRunStore();
  const builder = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('scripted', llm)
    .withModel('m', { provider: 'scripted', model_name: 'scripted-model', ...setup.model })
    .withThreadRunStore(store)
    .withTool(echoTool)
    .withAgentSpec({ id: 'agent', model: 'm', system_prompt: 'be brief', ...setup.spec });
  if (setup.summarizer !== undefined) builder.withSummarizer(setup.summarizer);
  const built = builder.build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return { runtime: built.value, llm, store };
}

async function run(h: ReturnType<typeof build>, messages: readonly Message[], threadId = 't') {
  const sink = new VecEventSink();
  const r = await h.runtime.run({ threadId, messages }, sink);
  if (!r.ok) throw new Error(JSON.stringify(r.error));
  return { result: r.value, events: sink.events };
}

const activities = (events: readonly AgentEvent[], type: string) =>
  events.flatMap((e) => (e.event_type === 'activity_snapshot' && e.activity_type === type ? [e.content as Record<string, unknown>] : []));

const longHistory = (n: number, size = 400, tag = 'h'): Message[] =>
  Array.from({ length: n }, (_, i) =>
    i % 2 === 0
      ? Messages.user(`${tag}q${i} ${'x'.repeat(size)}`, { id: `${tag}${i}` })
      : Messages.assistant(`${tag}a${i} ${'y'.repeat(size)}`, { id: `${tag}${i}` }),
  );

describe('resolve injects the context plugins only with a context policy', () => {
  it('adds ContextTransformPlugin and CompactionPlugin, with the policy clamped to the model', () => {
    const plain = build({ script: [] }).runtime.resolve('agent');
    expect(plain.ok && plain.value.plugins.map((p) => p.name)).not.toContain(CONTEXT_TRANSFORM_PLUGIN);
    const h = build({ script: [], spec: { context_policy: { max_context_tokens: 50_000 } }, model: { context_window: 8000, max_output_tokens: 1000 } });
    const r = h.runtime.resolve('agent');
    if (!r.ok) throw new Error('resolve');
    expect(r.value.plugins.map((p) => p.name)).toEqual(expect.arrayContaining([CONTEXT_TRANSFORM_PLUGIN, COMPACTION_PLUGIN]));
    expect(r.value.context?.policy).toMatchObject({ max_context_tokens: 8000, max_output_tokens: 1000 });
  });

  it('rejects a bad context section naming the field', () => {
    const b = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('scripted', new ScriptedLlm([]))
      .withModel('m', { provider: 'scripted', model_name: 'x' })
      .withAgentSpec({ id: 'agent', model: 'm', context_policy: {}, sections: { context_transform: { artifact_compaction: { threshold_tokens: 0 } } } })
      .build();
    expect(b.ok).toBe(false);
    expect(!b.ok && 'message' in b.error ? b.error.message : '').toContain('artifact_compaction.threshold_tokens must be >= 1');
  });
});

describe('truncation through the loop', () => {
  it('sends the model a truncated copy, reports it, and stores the whole history', async () => {
    const h = build({ script: [{ text: 'ok' }], spec: { context_policy: { max_context_tokens: 1200, max_output_tokens: 200, min_recent_messages: 2 } } });
    const input = [...longHistory(20), Messages.user('latest', { id: 'last' })];
    const { events } = await run(h, input);
    const sent = h.llm.requests[0]?.messages ?? [];
    expect(sent[0]).toMatchObject({ role: 'system' });
    expect(sent.at(-1)?.id).toBe('last');
    expect(sent.length).toBeLessThan(input.length);
    const [report] = activities(events, 'context_window');
    expect(report).toMatchObject({ dropped: input.length - (sent.length - 1), budget: 1000 - (report?.['tool_tokens'] as number) });
    expect(report?.['tool_tokens']).toBeGreaterThan(0);
    expect(report?.['tokens_after']).toBeLessThanOrEqual(report?.['budget'] as number);
    expect(types(events).indexOf('activity_snapshot')).toBeLessThan(types(events).indexOf('inference_complete'));
    expect(h.store.threads.get('t')?.messages.slice(0, input.length)).toEqual(input);
  });

  it('without a policy the model gets everything and nothing is reported', async () => {
    const h = build({ script: [{ text: 'ok' }] });
    const input = longHistory(20);
    const { events } = await run(h, input);
    expect(h.llm.requests[0]?.messages.length).toBe(input.length + 1);
    expect(activities(events, 'context_window')).toEqual([]);
  });
});

describe('auto-compaction through the loop (scripted summarizer)', () => {
  const policy = { autocompact_threshold: 500, compaction_raw_suffix_messages: 2, max_context_tokens: 100_000, max_output_tokens: 1000 };
  const summarizerOf = (texts: string[], seen: { transcript: string; previous: string | undefined }[] = []): Summarizer => ({
    summarize: async ({ transcript, previousSummary }) => {
      seen.push({ transcript, previous: previousSummary });
      const next = texts.shift();
      if (next === undefined) throw new Error('summarizer down');
      return next;
    },
  });

  it('summarises the old part, sends the summary instead, keeps every stored message', async () => {
    const seen: { transcript: string; previous: string | undefined }[] = [];
    const h = build({
      script: [{ text: 'ok' }],
      spec: { context_policy: policy, sections: { compaction: { min_gain_tokens: 100 } } },
      summarizer: summarizerOf(['the user asked twenty questions'], seen),
    });
    const input = [...longHistory(20), Messages.user('latest', { id: 'last' })];
    const { events } = await run(h, input);
    const compaction = activities(events, 'context_compaction');
    expect(compaction.map((c) => c['status'])).toEqual(['started', 'compacted']);
    expect(compaction[1]).toMatchObject({ boundary_message_id: 'h18' });
    const sent = h.llm.requests[0]?.messages ?? [];
    expect(sent.map((m) => m.id ?? m.role)).toEqual(['system', compaction[1]?.['summary_message_id'], 'h19', 'last']);
    expect(messageText(sent[1] as Message)).toBe(summaryText('the user asked twenty questions'));
    expect(sent[1]).toMatchObject({ role: 'system', visibility: 'internal' });
    expect(seen[0]?.transcript.startsWith('[User]: hq0')).toBe(true);
    const stored = h.store.threads.get('t')?.messages ?? [];
    expect(stored.filter((m) => input.includes(m))).toEqual(input);
    const snapshot = events.findLast((e) => e.event_type === 'state_snapshot');
    expect(JSON.stringify(snapshot)).toContain('"total_compactions":1');
  });

  it('compacts again on top of the previous summary, and the older history is not sent again', async () => {
    const seen: { transcript: string; previous: string | undefined }[] = [];
    const h = build({
      script: [{ text: 'first' }, { text: 'second' }],
      spec: { context_policy: policy, sections: { compaction: { min_gain_tokens: 100 } } },
      summarizer: summarizerOf(['S1', 'S2'], seen),
    });
    await run(h, [...longHistory(20), Messages.user('latest')]);
    await run(h, [...longHistory(20, 400, 'n'), Messages.user('again', { id: 'again' })]);
    expect(seen[1]?.previous).toBe('S1');
    expect(seen[1]?.transcript).not.toContain('hq0 ');
    expect(seen[1]?.transcript).toContain('nq0 ');
    const sent = h.llm.requests[1]?.messages ?? [];
    expect(sent.filter((m) => messageText(m).includes('<conversation-summary>')).map(messageText)).toEqual([summaryText('S2')]);
    expect(sent.at(-1)?.id).toBe('again');
  });

  it('skips a summary that saves too little, and reports a failed summarizer; neither loses a message', async () => {
    const big = 'z'.repeat(20_000);
    const h = build({
      script: [{ text: 'a' }, { text: 'b' }],
      spec: { context_policy: policy, sections: { compaction: { min_gain_tokens: 100 } } },
      summarizer: summarizerOf([big]),
    });
    const input = [...longHistory(20), Messages.user('latest')];
    const first = await run(h, input);
    expect(activities(first.events, 'context_compaction').map((c) => c['status'])).toEqual(['started', 'skipped']);
    expect(activities(first.events, 'context_compaction')[1]).toMatchObject({ reason: 'min_savings_ratio' });
    expect(h.llm.requests[0]?.messages.length).toBe(input.length + 1);
    const second = await run(h, [Messages.user('more')]);
    expect(activities(second.events, 'context_compaction')[1]).toMatchObject({ status: 'failed', message: 'summarizer down' });
    expect(second.result.termination.type).toBe('natural_end');
  });

  it('the DefaultSummarizer asks the agent’s model with the configured prompts', async () => {
    const h = build({
      script: [{ text: 'SUMMARY' }, { text: 'answer' }],
      spec: { context_policy: policy, sections: { compaction: { min_gain_tokens: 100, summary_max_tokens: 99, summary_model: 'cheap' } } },
    });
    const { result } = await run(h, [...longHistory(20), Messages.user('latest')]);
    const [summaryRequest, answerRequest] = h.llm.requests;
    expect(summaryRequest?.model).toBe('cheap');
    expect(summaryRequest?.overrides).toEqual({ max_tokens: 99 });
    expect(summaryRequest?.messages.map(messageText)[0]).toBe(DEFAULT_SUMMARIZER_SYSTEM_PROMPT);
    expect(messageText(summaryRequest?.messages[1] as Message)).toContain('<new-conversation>\n[User]: hq0');
    expect(answerRequest?.messages.map(messageText)).toContain(summaryText('SUMMARY'));
    expect(result.response).toBe('answer');
  });
});

describe('truncation recovery (book: 截断恢复)', () => {
  const cut: ScriptStep = { text: 'Here is', partial_tool_call: { id: 'c1', name: 'echo', arguments_text: '{"text": "unfin' }, stop_reason: 'MaxTokens' };

  it('continues a response cut mid tool call with an internal continuation prompt', async () => {
    const h = build({ script: [cut, { text: ' the rest.' }] });
    const { events, result } = await run(h, [Messages.user('go')]);
    expect(types(events).filter((t) => t === 'inference_complete')).toHaveLength(2);
    expect(events.find((e) => e.event_type === 'tool_call_done')).toMatchObject({ id: 'c1', outcome: 'failed' });
    const retry = h.llm.requests[1]?.messages ?? [];
    expect(retry.slice(-2).map((m) => [m.role, messageText(m), m.visibility ?? 'external'])).toEqual([
      ['assistant', 'Here is', 'external'],
      ['user', CONTINUATION_PROMPT, 'internal'],
    ]);
    expect(result.response).toBe(' the rest.');
    expect(result.termination.type).toBe('natural_end');
  });

  it('stops after max_continuation_retries and ends with the cut text', async () => {
    const h = build({ script: [cut, cut, cut, { text: 'never' }], spec: { max_continuation_retries: 2 } });
    const { events, result } = await run(h, [Messages.user('go')]);
    expect(h.llm.requests).toHaveLength(3);
    expect(types(events).filter((t) => t === 'inference_complete')).toHaveLength(3);
    expect(result.response).toBe('Here is');
  });

  it('does not retry when max_continuation_retries is 0, nor a text cut that ends naturally', async () => {
    const h = build({ script: [cut, { text: 'unused' }], spec: { max_continuation_retries: 0 } });
    await run(h, [Messages.user('go')]);
    expect(h.llm.requests).toHaveLength(1);
    const h2 = build({ script: [{ text: 'complete', stop_reason: 'EndTurn' }] });
    await run(h2, [Messages.user('go')]);
    expect(h2.llm.requests).toHaveLength(1);
  });
});
