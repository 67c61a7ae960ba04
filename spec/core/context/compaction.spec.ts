import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ContextWindowPolicySchema } from '../../../src/contract/agent-spec.ts';
import { Messages, type Message } from '../../../src/contract/message.ts';
import {
  compactionView,
  CompactionConfigSchema,
  extractPreviousSummary,
  findCompactionBoundary,
  insertSummary,
  passesSavingsGate,
  planCompaction,
  renderTranscript,
  savingsPpm,
  shouldAutocompact,
  summarizerUserPrompt,
  summaryText,
} from '../../../src/core/context/index.ts';
import { conversation, pairsWhole } from '../../support/conversations.ts';

const config = CompactionConfigSchema.parse({ min_gain_tokens: 0 });
const arbPolicy = fc
  .record({
    compaction_mode: fc.constantFrom('keep_recent_raw_suffix' as const, 'compact_to_safe_frontier' as const),
    compaction_raw_suffix_messages: fc.integer({ min: 0, max: 6 }),
    min_recent_messages: fc.integer({ min: 0, max: 6 }),
  })
  .map((p) => ContextWindowPolicySchema.parse(p));

describe('compaction planning (core-spec §5.6)', () => {
  it('the frontier never splits a tool call from its result', () => {
    fc.assert(
      fc.property(conversation(), arbPolicy, (messages, policy) => {
        const plan = planCompaction(messages, policy, config);
        if (plan === undefined) return;
        expect(pairsWhole(messages.slice(0, plan.boundary + 1))).toBe(true);
        expect(messages[plan.boundary + 1]?.role).not.toBe('tool');
      }),
      { numRuns: 250 },
    );
  });

  it('keeps the raw suffix and the latest user turn raw', () => {
    fc.assert(
      fc.property(conversation(), arbPolicy, (messages, policy) => {
        const plan = planCompaction(messages, policy, config);
        if (plan === undefined) return;
        const suffix = messages.length - plan.boundary - 1;
        const configured = policy.compaction_mode === 'keep_recent_raw_suffix' ? policy.compaction_raw_suffix_messages : policy.min_recent_messages;
        expect(suffix).toBeGreaterThanOrEqual(Math.min(configured, messages.length));
        const lastUser = messages.findLastIndex((m) => m.role === 'user');
        if (lastUser >= 0) expect(plan.boundary).toBeLessThan(lastUser);
      }),
      { numRuns: 250 },
    );
  });

  it('the summary replaces exactly the messages up to the frontier', () => {
    fc.assert(
      fc.property(conversation(), arbPolicy, fc.integer({ min: 0, max: 5 }), (tail, policy, prefix) => {
        // A history that already holds older, summarised messages before its view.
        const older = Array.from({ length: prefix }, (_, i) => Messages.user(`old ${i}`, { id: `o${i}` }));
        const history = prefix > 0 ? [...older, Messages.internalSystem(summaryText('before'), { id: 'S0' }), ...tail] : tail;
        const view = compactionView(history);
        const viewStart = history.length - view.length;
        const plan = planCompaction(view, policy, config);
        if (plan === undefined) return;
        const summary = Messages.internalSystem(summaryText('new'), { id: 'S1' });
        const next = insertSummary(history, viewStart, plan.boundary, summary);
        expect(compactionView(next)).toEqual([summary, ...view.slice(plan.boundary + 1)]);
        // Nothing is lost from the stored history.
        expect(next.filter((m) => m !== summary)).toEqual(history);
      }),
      { numRuns: 250 },
    );
  });

  it('finds the last safe boundary', () => {
    const msgs: Message[] = [
      Messages.user('q', { id: '0' }),
      Messages.assistantWithToolCalls('', [{ id: 'c', name: 't', arguments: {} }], { id: '1' }),
      Messages.tool('c', 'r', { id: '2' }),
      Messages.assistant('a', { id: '3' }),
    ];
    expect(findCompactionBoundary(msgs, 0, 4)).toBe(3);
    expect(findCompactionBoundary(msgs, 0, 2)).toBe(0);
    expect(findCompactionBoundary(msgs, 1, 2)).toBeUndefined();
  });

  it('needs a minimum gain and something to summarise', () => {
    const policy = ContextWindowPolicySchema.parse({ compaction_raw_suffix_messages: 1 });
    const msgs = [Messages.user('a'.repeat(100)), Messages.assistant('b'.repeat(100)), Messages.user('c')];
    expect(planCompaction(msgs, policy, { min_gain_tokens: 1024 })).toBeUndefined();
    expect(planCompaction(msgs, policy, { min_gain_tokens: 10 })?.boundary).toBe(1);
    expect(planCompaction([Messages.user('x')], policy, config)).toBeUndefined();
    const internalOnly = [Messages.internalSystem('note'), Messages.internalUser('n'), Messages.user('c')];
    expect(planCompaction(internalOnly, policy, config)).toBeUndefined();
  });

  it('works on the previous summary incrementally', () => {
    const view = [Messages.internalSystem(summaryText('  user likes tea  ')), Messages.user('more'), Messages.assistant('ok'), Messages.user('now')];
    const plan = planCompaction(view, ContextWindowPolicySchema.parse({ compaction_raw_suffix_messages: 1 }), config);
    expect(plan?.previousSummary).toBe('user likes tea');
    expect(plan?.transcript).toBe('[User]: more\n\n[Assistant]: ok');
    expect(summarizerUserPrompt(CompactionConfigSchema.parse({}), plan?.transcript ?? '', plan?.previousSummary)).toBe(
      'Update the cumulative conversation summary.\n\n<existing-summary>\nuser likes tea\n</existing-summary>\n\n<new-conversation>\n[User]: more\n\n[Assistant]: ok\n</new-conversation>',
    );
    expect(extractPreviousSummary([Messages.internalSystem(summaryText('   '))])).toBeUndefined();
    expect(extractPreviousSummary([Messages.system(summaryText('external'))])).toBeUndefined();
    expect(renderTranscript([Messages.tool('c', 'r'), Messages.system('s')])).toBe('[Tool]: r\n\n[System]: s');
  });
});

describe('savings gate and trigger', () => {
  it('computes savings in parts per million', () => {
    expect(savingsPpm(1000, 300)).toBe(700_000);
    expect(savingsPpm(0, 0)).toBe(0);
    expect(savingsPpm(100, 200)).toBe(0);
    expect(passesSavingsGate(1000, 700, 0.3)).toBe(true);
    expect(passesSavingsGate(1000, 701, 0.3)).toBe(false);
  });

  it('fires at the threshold', () => {
    const p = ContextWindowPolicySchema.parse({ autocompact_threshold: 100 });
    expect(shouldAutocompact(99, p)).toBe(false);
    expect(shouldAutocompact(100, p)).toBe(true);
    expect(shouldAutocompact(10_000, ContextWindowPolicySchema.parse({}))).toBe(false);
  });
});
