import type { StreamResult } from '../../contract/stream.ts';

/** The internal user message that asks a cut-off model to go on (0.6's text). */
export const CONTINUATION_PROMPT =
  'Your response was cut off because it exceeded the output token limit. Please break your work into smaller pieces. Continue from where you left off.';

/**
 * A response cut by the output limit that is worth continuing (core-spec §5.7): stopped on MaxTokens
 * with an incomplete tool call, or with text and no tool call.
 */
export function needsTruncationRecovery(result: StreamResult): boolean {
  if (result.stopReason !== 'MaxTokens') return false;
  if (result.hasIncompleteToolCalls) return true;
  return result.toolCalls.length === 0 && result.content.some((b) => b.type === 'text' && b.text !== '');
}

/** Whether to retry once more: recovery needed and fewer than `max` retries so far. */
export const shouldRetryTruncated = (result: StreamResult, retriesSoFar: number, max: number): boolean =>
  max > 0 && retriesSoFar < max && needsTruncationRecovery(result);
