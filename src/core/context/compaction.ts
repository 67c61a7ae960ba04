import type { ContextWindowPolicy } from '../../contract/agent-spec.ts';
import { messageText, type Message } from '../../contract/message.ts';
import type { CompactionConfig } from './policy.ts';
import { byteHeuristicTokenizer, type Tokenizer } from './tokens.ts';

export const SUMMARY_OPEN = '<conversation-summary>';
export const SUMMARY_CLOSE = '</conversation-summary>';

/** The text of the summary message: `<conversation-summary>\n…\n</conversation-summary>`. */
export const summaryText = (summary: string): string => `${SUMMARY_OPEN}\n${summary}\n${SUMMARY_CLOSE}`;

/** A summary message: internal system, carrying the tag. */
export const isSummaryMessage = (m: Message): boolean => m.role === 'system' && m.visibility === 'internal' && messageText(m).includes(SUMMARY_OPEN);

/** Index of the latest summary message, or -1. */
export function latestSummaryIndex(history: readonly Message[]): number {
  for (let i = history.length - 1; i >= 0; i--) if (isSummaryMessage(history[i] as Message)) return i;
  return -1;
}

/**
 * What the model is sent of a compacted history: from the latest summary on. The stored history keeps
 * every message (nothing is lost); the summarised part is simply not sent again (0.6: load-time trim).
 */
export function compactionView(history: readonly Message[]): readonly Message[] {
  const at = latestSummaryIndex(history);
  return at <= 0 ? history : history.slice(at);
}

/**
 * The last index in `[start, end)` after which the history can be cut without splitting a tool call
 * from its result: every call so far is answered and the next message is not a tool result.
 */
export function findCompactionBoundary(messages: readonly Message[], start: number, end: number): number | undefined {
  const open = new Set<string>();
  let boundary: number | undefined;
  for (let i = start; i < end; i++) {
    const m = messages[i] as Message;
    if (m.role === 'assistant' && m.tool_calls !== undefined) for (const c of m.tool_calls) open.add(c.id);
    if (m.role === 'tool' && m.tool_call_id !== undefined) open.delete(m.tool_call_id);
    if (open.size === 0 && messages[i + 1]?.role !== 'tool') boundary = i;
  }
  return boundary;
}

const ROLE_LABEL = { system: 'System', user: 'User', assistant: 'Assistant', tool: 'Tool' } as const;

/** `[Role]: text` per external, non-empty message, joined by blank lines. */
export function renderTranscript(messages: readonly Message[]): string {
  const parts: string[] = [];
  for (const m of messages) {
    if (m.visibility === 'internal') continue;
    const text = messageText(m);
    if (text === '') continue;
    parts.push(`[${ROLE_LABEL[m.role]}]: ${text}`);
  }
  return parts.join('\n\n');
}

/** The text between the tags of the first summary message, trimmed; undefined when there is none. */
export function extractPreviousSummary(messages: readonly Message[]): string | undefined {
  for (const m of messages) {
    if (!isSummaryMessage(m)) continue;
    const text = messageText(m);
    const open = text.indexOf(SUMMARY_OPEN);
    const close = text.indexOf(SUMMARY_CLOSE, open);
    if (close < 0) continue;
    const inner = text.slice(open + SUMMARY_OPEN.length, close).trim();
    if (inner !== '') return inner;
  }
  return undefined;
}

export interface CompactionPlan {
  /** Index (in the view) of the last message the summary replaces. */
  readonly boundary: number;
  readonly preTokens: number;
  readonly transcript: string;
  readonly previousSummary: string | undefined;
}

/**
 * Plans a compaction of `view` (core-spec §5.6 `plan_compaction`): a raw suffix is kept —
 * `compaction_raw_suffix_messages` (KeepRecentRawSuffix) or `min_recent_messages`
 * (CompactToSafeFrontier), and never less than the latest external user turn — and the summary replaces
 * everything up to the last safe boundary before it. Undefined when nothing worth summarising is there.
 */
export function planCompaction(
  view: readonly Message[],
  policy: ContextWindowPolicy,
  config: Pick<CompactionConfig, 'min_gain_tokens'>,
  tokenizer: Tokenizer = byteHeuristicTokenizer,
): CompactionPlan | undefined {
  const n = view.length;
  if (n < 2) return undefined;
  const configured = policy.compaction_mode === 'keep_recent_raw_suffix' ? policy.compaction_raw_suffix_messages : policy.min_recent_messages;
  let latestUser = 0;
  for (let i = n - 1; i >= 0; i--) {
    const m = view[i] as Message;
    if (m.role === 'user' && m.visibility !== 'internal') {
      latestUser = n - i;
      break;
    }
  }
  const keepSuffix = Math.min(Math.max(configured, latestUser), n);
  const searchEnd = n - keepSuffix;
  if (searchEnd < 2) return undefined;
  const boundary = findCompactionBoundary(view, 0, searchEnd);
  if (boundary === undefined) return undefined;
  let preTokens = 0;
  for (let i = 0; i <= boundary; i++) preTokens += tokenizer.messageTokens(view[i] as Message);
  if (preTokens < config.min_gain_tokens) return undefined;
  const head = view.slice(0, boundary + 1);
  const transcript = renderTranscript(head);
  if (transcript === '') return undefined;
  return { boundary, preTokens, transcript, previousSummary: extractPreviousSummary(head) };
}

/**
 * Inserts the summary message right after the boundary (`viewStart + boundary`) of the full history.
 * Nothing is removed: `compactionView` of the result is the summary followed by what came after the
 * boundary.
 */
export function insertSummary(history: readonly Message[], viewStart: number, boundary: number, summary: Message): Message[] {
  const at = viewStart + boundary + 1;
  return [...history.slice(0, at), summary, ...history.slice(at)];
}

/** `round(clamp((pre − post) / pre, 0, 1) · 10⁶)`, 0 when nothing is saved. */
export function savingsPpm(pre: number, post: number): number {
  if (pre <= 0 || post >= pre) return 0;
  return Math.round(Math.min(1, Math.max(0, (pre - post) / pre)) * 1e6);
}

/** The savings gate: a summary that saves less than `min_savings_ratio` is skipped. */
export const passesSavingsGate = (pre: number, post: number, minSavingsRatio: number): boolean =>
  savingsPpm(pre, post) >= Math.round(Math.min(1, Math.max(0, minSavingsRatio)) * 1e6);

/** The summarizer's user prompt: `{previous_summary}` and `{messages}` filled in. */
export function summarizerUserPrompt(config: Pick<CompactionConfig, 'summarizer_user_prompt'>, transcript: string, previous: string | undefined): string {
  return config.summarizer_user_prompt.replaceAll('{previous_summary}', (previous ?? '').trim()).replaceAll('{messages}', transcript.trim());
}

/** Auto-compaction fires when the view reaches the threshold. */
export const shouldAutocompact = (viewTokens: number, policy: ContextWindowPolicy): boolean =>
  policy.autocompact_threshold !== undefined && viewTokens >= policy.autocompact_threshold;
