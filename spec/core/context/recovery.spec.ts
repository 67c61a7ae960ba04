import { describe, expect, it } from 'vitest';
import type { StreamResult } from '../../../src/contract/stream.ts';
import { needsTruncationRecovery, shouldRetryTruncated } from '../../../src/core/context/index.ts';

const result = (fields: Partial<StreamResult>): StreamResult => ({ content: [], reasoning: '', toolCalls: [], hasIncompleteToolCalls: false, ...fields });

describe('truncation recovery (core-spec §5.7)', () => {
  it('recovers a MaxTokens stop with an incomplete tool call or with bare text', () => {
    expect(needsTruncationRecovery(result({ stopReason: 'MaxTokens', hasIncompleteToolCalls: true }))).toBe(true);
    expect(needsTruncationRecovery(result({ stopReason: 'MaxTokens', content: [{ type: 'text', text: 'half' }] }))).toBe(true);
    expect(needsTruncationRecovery(result({ stopReason: 'MaxTokens' }))).toBe(false);
    expect(
      needsTruncationRecovery(result({ stopReason: 'MaxTokens', content: [{ type: 'text', text: 'x' }], toolCalls: [{ id: 'c', name: 't', arguments: {} }] })),
    ).toBe(false);
    expect(needsTruncationRecovery(result({ stopReason: 'EndTurn', hasIncompleteToolCalls: true }))).toBe(false);
  });

  it('retries at most max_continuation_retries times', () => {
    const cut = result({ stopReason: 'MaxTokens', hasIncompleteToolCalls: true });
    expect(shouldRetryTruncated(cut, 0, 2)).toBe(true);
    expect(shouldRetryTruncated(cut, 1, 2)).toBe(true);
    expect(shouldRetryTruncated(cut, 2, 2)).toBe(false);
    expect(shouldRetryTruncated(cut, 0, 0)).toBe(false);
  });
});
