import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ContextWindowPolicySchema } from '../../../src/contract/agent-spec.ts';
import { Messages } from '../../../src/contract/message.ts';
import { byteHeuristicTokenizer, effectivePolicy, historyBudget, utf8Length } from '../../../src/core/context/index.ts';

describe('token estimation (core-spec §5.2)', () => {
  it('utf8Length is the UTF-8 byte length', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (s) => {
        expect(utf8Length(s)).toBe(Buffer.byteLength(s, 'utf8'));
      }),
      { numRuns: 300 },
    );
    expect(utf8Length('\ud800')).toBe(3);
  });

  it('is 4 + floor(bytes / 4) per message, 50 per non-text block', () => {
    expect(byteHeuristicTokenizer.messageTokens(Messages.user('héllo wörld'))).toBe(4 + Math.floor(13 / 4));
    expect(byteHeuristicTokenizer.messageTokens({ role: 'user', content: [{ type: 'image', source: { kind: 'url', url: 'x' } }] })).toBe(
      4 + Math.floor(50 / 4),
    );
  });

  it('counts tool calls (0.6 does not)', () => {
    const call = Messages.assistantWithToolCalls('', [{ id: 'c', name: 'search', arguments: { query: 'weather in Paris' } }]);
    expect(byteHeuristicTokenizer.messageTokens(call)).toBe(4 + Math.floor((6 + JSON.stringify({ query: 'weather in Paris' }).length) / 4));
  });

  it('costs a tool schema name + description + floor(schema / 4) + 10', () => {
    const schema = { type: 'object', properties: { q: { type: 'string' } } };
    expect(byteHeuristicTokenizer.toolTokens([{ id: 't', name: 'find', description: 'finds', parameters: schema }])).toBe(
      4 + 5 + Math.floor(JSON.stringify(schema).length / 4) + 10,
    );
  });
});

describe('effective policy (core-spec §5.1)', () => {
  const policy = ContextWindowPolicySchema.parse({ autocompact_threshold: 500_000 });

  it('clamps to the model, output within context, the threshold within what is left for input', () => {
    const p = effectivePolicy(policy, { context_window: 8000, max_output_tokens: 4000 });
    expect(p).toMatchObject({ max_context_tokens: 8000, max_output_tokens: 4000, autocompact_threshold: 4000 });
    expect(effectivePolicy(policy, { context_window: 1000 })).toMatchObject({ max_context_tokens: 1000, max_output_tokens: 1000 });
    expect(effectivePolicy(policy, { context_window: 1000 }).autocompact_threshold).toBeUndefined();
    expect(effectivePolicy(ContextWindowPolicySchema.parse({}))).toEqual(ContextWindowPolicySchema.parse({}));
  });

  it('budget saturates at zero', () => {
    expect(historyBudget(ContextWindowPolicySchema.parse({ max_context_tokens: 100, max_output_tokens: 50 }), 80)).toBe(0);
    expect(historyBudget(ContextWindowPolicySchema.parse({ max_context_tokens: 100, max_output_tokens: 50 }), 20)).toBe(30);
  });
});
