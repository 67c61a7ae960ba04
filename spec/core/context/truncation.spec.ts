import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Messages, type Message } from '../../../src/contract/message.ts';
import { ContextWindowPolicySchema } from '../../../src/contract/agent-spec.ts';
import {
  byteHeuristicTokenizer,
  compactArtifact,
  compactArtifacts,
  DEFAULT_ARTIFACT_COMPACTION,
  estimateTokens,
  INTERRUPTED_TOOL_RESULT,
  repairToolPairs,
  transformContext,
  truncateMessages,
} from '../../../src/core/context/index.ts';
import { conversation, isSubsequence, pairsWhole } from '../../support/conversations.ts';

const RUNS = { numRuns: 250 };
const tok = (m: Message): number => byteHeuristicTokenizer.messageTokens(m);

/** Systems, the last `minRecent` non-system messages, and the tool-pair partners of those. */
function protectedTokens(messages: readonly Message[], minRecent: number): number {
  const keep = new Set<Message>();
  let recent = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as Message;
    if (m.role === 'system') keep.add(m);
    else if (recent < minRecent) {
      keep.add(m);
      recent++;
    }
  }
  // Closure: a kept result keeps its assistant, a kept assistant keeps all of its results.
  for (let size = -1; size !== keep.size; ) {
    size = keep.size;
    for (const m of [...keep]) {
      const ids = m.role === 'tool' ? [m.tool_call_id] : (m.tool_calls ?? []).map((c) => c.id);
      for (const other of messages) {
        if (other.role === 'assistant' && other.tool_calls?.some((c) => ids.includes(c.id))) keep.add(other);
        if (other.role === 'tool' && ids.includes(other.tool_call_id)) keep.add(other);
      }
    }
  }
  let total = 0;
  for (const m of keep) total += tok(m);
  return total;
}

const arbCase = fc.record({ messages: conversation(), budget: fc.integer({ min: 0, max: 4000 }), minRecent: fc.integer({ min: 0, max: 12 }) });

describe('truncation (book: 优化上下文窗口 → 截断)', () => {
  it('keeps an order-preserving subsequence of the input', () => {
    fc.assert(
      fc.property(arbCase, ({ messages, budget, minRecent }) => {
        expect(isSubsequence(truncateMessages(messages, { budget, minRecent }).messages, messages)).toBe(true);
      }),
      RUNS,
    );
  });

  it('keeps every system message, wherever it stands', () => {
    fc.assert(
      fc.property(arbCase, ({ messages, budget, minRecent }) => {
        const out = truncateMessages(messages, { budget, minRecent }).messages;
        for (const m of messages) if (m.role === 'system') expect(out).toContain(m);
      }),
      RUNS,
    );
  });

  it('keeps at least the last min_recent_messages non-system messages', () => {
    fc.assert(
      fc.property(arbCase, ({ messages, budget, minRecent }) => {
        const out = new Set(truncateMessages(messages, { budget, minRecent }).messages);
        const recent = messages.filter((m) => m.role !== 'system').slice(-minRecent || messages.length);
        for (const m of minRecent === 0 ? [] : recent) expect(out.has(m)).toBe(true);
      }),
      RUNS,
    );
  });

  it('never leaves a tool result without its call or a call without its result', () => {
    fc.assert(
      fc.property(arbCase, ({ messages, budget, minRecent }) => {
        expect(pairsWhole(truncateMessages(messages, { budget, minRecent }).messages)).toBe(true);
      }),
      RUNS,
    );
  });

  it('fits the budget whenever the protected set does', () => {
    fc.assert(
      fc.property(arbCase, ({ messages, budget, minRecent }) => {
        const r = truncateMessages(messages, { budget, minRecent });
        expect(r.tokens).toBe(estimateTokens(r.messages));
        if (protectedTokens(messages, minRecent) <= budget) expect(r.tokens).toBeLessThanOrEqual(budget);
      }),
      RUNS,
    );
  });

  it('is idempotent', () => {
    fc.assert(
      fc.property(arbCase, ({ messages, budget, minRecent }) => {
        const once = truncateMessages(messages, { budget, minRecent }).messages;
        expect(truncateMessages(once, { budget, minRecent }).messages).toEqual(once);
      }),
      RUNS,
    );
  });

  it('counts a protected pair whole: a recent result keeps its assistant and that assistant’s other results', () => {
    const msgs: Message[] = [
      Messages.user('', { id: 'u0' }),
      Messages.assistantWithToolCalls(
        '',
        [
          { id: 'c0', name: 'tool', arguments: { q: '' } },
          { id: 'c1', name: 'tool', arguments: { q: '' } },
        ],
        { id: 'a1' },
      ),
      Messages.tool('c0', '', { id: 'r0' }),
      Messages.tool('c1', '', { id: 'r1' }),
      Messages.user('', { id: 'u2' }),
    ];
    const r = truncateMessages(msgs, { budget: 18, minRecent: 2 });
    expect(r.messages.map((m) => m.id)).toEqual(['a1', 'r0', 'r1', 'u2']);
    expect(r.tokens).toBe(22);
  });

  it('keeps a result with its call when the result comes after a later assistant message', () => {
    const msgs: Message[] = [
      Messages.assistantWithToolCalls('', [{ id: 'c1', name: 't', arguments: {} }], { id: 'a' }),
      Messages.assistantWithToolCalls('', [{ id: 'c2', name: 't', arguments: {} }], { id: 'b' }),
      Messages.tool('c2', 'two', { id: 'r2' }),
      Messages.tool('c1', 'x'.repeat(400), { id: 'r1' }),
      Messages.user('now', { id: 'u' }),
    ];
    expect(truncateMessages(msgs, { budget: 30, minRecent: 1 }).messages.map((m) => m.id)).toEqual(['b', 'r2', 'u']);
    expect(pairsWhole(truncateMessages(msgs, { budget: 30, minRecent: 1 }).messages)).toBe(true);
  });

  it('drops the oldest history first and keeps what fits untouched', () => {
    const msgs = [Messages.user('a'.repeat(400), { id: '1' }), Messages.assistant('b'.repeat(400), { id: '2' }), Messages.user('c'.repeat(400), { id: '3' })];
    const each = tok(msgs[0] as Message);
    expect(truncateMessages(msgs, { budget: each * 3, minRecent: 0 }).messages).toEqual(msgs);
    expect(truncateMessages(msgs, { budget: each * 2, minRecent: 0 }).messages.map((m) => m.id)).toEqual(['2', '3']);
    expect(truncateMessages(msgs, { budget: each, minRecent: 0 }).messages.map((m) => m.id)).toEqual(['3']);
  });

  it('keeps a system message in the middle of the history (0.6 would drop it)', () => {
    const msgs = [
      Messages.user('x'.repeat(800), { id: 'u1' }),
      Messages.system('rules', { id: 's' }),
      Messages.user('y'.repeat(800), { id: 'u2' }),
      Messages.user('z', { id: 'u3' }),
    ];
    const out = truncateMessages(msgs, { budget: 20, minRecent: 1 }).messages.map((m) => m.id);
    expect(out).toEqual(['s', 'u3']);
  });

  it('drops an assistant message with tool calls together with its results', () => {
    const msgs: Message[] = [
      Messages.assistantWithToolCalls('', [{ id: 'c1', name: 't', arguments: {} }], { id: 'a' }),
      Messages.tool('c1', 'r'.repeat(400), { id: 'r' }),
      Messages.user('now', { id: 'u' }),
    ];
    expect(truncateMessages(msgs, { budget: 10, minRecent: 1 }).messages.map((m) => m.id)).toEqual(['u']);
    // The recent window reaching into a pair keeps the whole pair.
    expect(truncateMessages(msgs, { budget: 10, minRecent: 2 }).messages.map((m) => m.id)).toEqual(['a', 'r', 'u']);
  });
});

describe('tool pair repair', () => {
  it('answers a dangling call after the results that follow it and drops an orphan result', () => {
    const msgs: Message[] = [
      Messages.tool('ghost', 'orphan'),
      Messages.assistantWithToolCalls('', [
        { id: 'c1', name: 't', arguments: {} },
        { id: 'c2', name: 't', arguments: {} },
      ]),
      Messages.tool('c1', 'one'),
      Messages.user('next'),
    ];
    const r = repairToolPairs(msgs);
    expect(r.orphans).toBe(1);
    expect(r.patched).toBe(1);
    expect(r.messages.map((m) => [m.role, m.tool_call_id ?? '', m.content[0]?.type === 'text' ? m.content[0].text : ''])).toEqual([
      ['assistant', '', ''],
      ['tool', 'c1', 'one'],
      ['tool', 'c2', INTERRUPTED_TOOL_RESULT],
      ['user', '', 'next'],
    ]);
    expect(pairsWhole(r.messages)).toBe(true);
  });

  it('leaves a well-formed conversation as it is', () => {
    fc.assert(
      fc.property(conversation(), (messages) => {
        expect(repairToolPairs(messages)).toEqual({ messages, patched: 0, orphans: 0 });
      }),
      { numRuns: 200 },
    );
  });
});

describe('artifact compaction (core-spec §5.5)', () => {
  const cfg = { threshold_tokens: 10, preview_max_chars: 5, preview_max_lines: 2 };

  it('keeps text under the threshold and previews text over it', () => {
    expect(compactArtifact('short', cfg)).toBe('short');
    expect(compactArtifact('x'.repeat(40), cfg)).toBe('xxxxx\n\n[Content compacted: original ~10 tokens, showing first 5 chars]');
  });

  it('stops at the line limit, the newline that reaches it included', () => {
    expect(compactArtifact(`a\nb\n${'c'.repeat(40)}`, { ...cfg, preview_max_chars: 100 })).toBe(
      'a\nb\n\n\n[Content compacted: original ~11 tokens, showing first 4 chars]',
    );
  });

  it('counts characters as code points, never splitting a surrogate pair', () => {
    const text = '😀'.repeat(20);
    expect(compactArtifact(text, cfg).startsWith(`${'😀'.repeat(5)}\n\n`)).toBe(true);
  });

  it('rewrites tool results only; user, assistant and system text never change', () => {
    fc.assert(
      fc.property(conversation(20), (messages) => {
        const { messages: out } = compactArtifacts(messages, { ...DEFAULT_ARTIFACT_COMPACTION, threshold_tokens: 20, preview_max_chars: 30 });
        out.forEach((m, i) => {
          if (m.role !== 'tool') expect(m).toBe(messages[i]);
          else expect(estimateTokens([m])).toBeLessThanOrEqual(Math.max(estimateTokens([messages[i] as Message]), 40));
        });
      }),
      { numRuns: 200 },
    );
  });

  it('previews an oversized tool result before any message is dropped', () => {
    const policy = ContextWindowPolicySchema.parse({ max_context_tokens: 700, max_output_tokens: 100, min_recent_messages: 0 });
    const msgs: Message[] = [
      Messages.user('first question', { id: 'u1' }),
      Messages.assistantWithToolCalls('', [{ id: 'c', name: 't', arguments: {} }], { id: 'a' }),
      Messages.tool('c', 'row\n'.repeat(3000), { id: 'r' }),
      Messages.user('second', { id: 'u2' }),
    ];
    const { messages: out, report } = transformContext(msgs, [], policy, { artifact: DEFAULT_ARTIFACT_COMPACTION });
    expect(report.compacted_artifacts).toBe(1);
    expect(report.dropped).toBe(0);
    expect(out.map((m) => m.id)).toEqual(['u1', 'a', 'r', 'u2']);
    expect(report.tokens_after).toBeLessThanOrEqual(report.budget);
  });
});

describe('the budget', () => {
  it('is max_context − max_output − tool schema tokens, and the transform keeps within it', () => {
    const policy = ContextWindowPolicySchema.parse({ max_context_tokens: 300, max_output_tokens: 100, min_recent_messages: 1 });
    const tools = [{ id: 't', name: 't', description: 'd'.repeat(50), parameters: { type: 'object' } }];
    const msgs = Array.from({ length: 20 }, (_, i) => Messages.user('m'.repeat(60), { id: String(i) }));
    const { report, messages: out } = transformContext(msgs, tools, policy, { artifact: DEFAULT_ARTIFACT_COMPACTION });
    expect(report.tool_tokens).toBe(1 + 50 + Math.floor(JSON.stringify({ type: 'object' }).length / 4) + 10);
    expect(report.budget).toBe(300 - 100 - report.tool_tokens);
    expect(report.tokens_after).toBeLessThanOrEqual(report.budget);
    expect(out.at(-1)?.id).toBe('19');
    expect(report.dropped).toBe(20 - out.length);
  });
});
