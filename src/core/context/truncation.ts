import type { ContextWindowPolicy } from '../../contract/agent-spec.ts';
import type { ContentBlock, Message } from '../../contract/message.ts';
import type { ToolDescriptor } from '../../contract/tool.ts';
import { historyBudget, type ArtifactCompactionConfig } from './policy.ts';
import { byteHeuristicTokenizer, utf8Length, type Tokenizer } from './tokens.ts';

export interface TruncationOptions {
  /** Tokens the messages may take in total. */
  readonly budget: number;
  /** Non-system messages at the end that are always kept. */
  readonly minRecent: number;
  readonly tokenizer?: Tokenizer;
}

export interface TruncationResult {
  readonly messages: Message[];
  /** Messages dropped. */
  readonly dropped: number;
  /** Tokens of what is kept. */
  readonly tokens: number;
}

/**
 * Drops the oldest history until the messages fit `budget` (book: 优化上下文窗口 → 截断). Every
 * system message is kept wherever it stands (0.6 keeps only the leading run ⟂), and so are the last
 * `minRecent` non-system messages. An assistant message with tool calls and the tool results that
 * answer it form one unit: kept or dropped together, so truncation never separates a call from its
 * result. The output is an order-preserving subsequence of the input; one pass, linear time.
 */
export function truncateMessages(messages: readonly Message[], options: TruncationOptions): TruncationResult {
  const tokenizer = options.tokenizer ?? byteHeuristicTokenizer;
  const n = messages.length;
  const tokens = new Float64Array(n);
  let total = 0;
  for (let i = 0; i < n; i++) {
    const t = tokenizer.messageTokens(messages[i] as Message);
    tokens[i] = t;
    total += t;
  }
  if (total <= options.budget) return { messages: [...messages], dropped: 0, tokens: total };

  // unit[i]: index of the message that heads i's unit (an assistant owning tool calls, or i itself).
  // Results usually follow their assistant, so the latest one is checked first; the id map over all
  // earlier calls is built only the first time a result answers an older assistant.
  const unit = new Int32Array(n);
  let latest = -1;
  let owner: Map<string, number> | undefined;
  for (let i = 0; i < n; i++) {
    const m = messages[i] as Message;
    unit[i] = i;
    if (m.role === 'assistant' && m.tool_calls !== undefined) {
      latest = i;
      if (owner !== undefined) for (const call of m.tool_calls) owner.set(call.id, i);
    } else if (m.role === 'tool' && m.tool_call_id !== undefined) {
      const id = m.tool_call_id;
      if (latest >= 0 && (messages[latest] as Message).tool_calls?.some((c) => c.id === id) === true) unit[i] = latest;
      else {
        owner ??= ownersBefore(messages, i);
        const head = owner.get(id);
        if (head !== undefined) unit[i] = head;
      }
    }
  }
  const unitTokens = new Float64Array(n);
  const protectedUnit = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const u = unit[i] as number;
    unitTokens[u] = (unitTokens[u] as number) + (tokens[i] as number);
  }
  let recent = 0;
  for (let i = n - 1; i >= 0; i--) {
    const m = messages[i] as Message;
    if (m.role === 'system') protectedUnit[unit[i] as number] = 1;
    else if (recent < options.minRecent) {
      protectedUnit[unit[i] as number] = 1;
      recent++;
    }
  }
  const droppedUnit = new Uint8Array(n);
  for (let i = 0; i < n && total > options.budget; i++) {
    if (unit[i] !== i || protectedUnit[i] === 1) continue;
    droppedUnit[i] = 1;
    total -= unitTokens[i] as number;
  }
  const kept: Message[] = [];
  for (let i = 0; i < n; i++) if (droppedUnit[unit[i] as number] === 0) kept.push(messages[i] as Message);
  return { messages: kept, dropped: n - kept.length, tokens: total };
}

/** Call id → index of the assistant message that made the call, over `messages[0, end)`. */
function ownersBefore(messages: readonly Message[], end: number): Map<string, number> {
  const owner = new Map<string, number>();
  for (let i = 0; i < end; i++) {
    const m = messages[i] as Message;
    if (m.role === 'assistant' && m.tool_calls !== undefined) for (const call of m.tool_calls) owner.set(call.id, i);
  }
  return owner;
}

/** What a dangling tool call is answered with (0.6's text). */
export const INTERRUPTED_TOOL_RESULT = '[Tool execution was interrupted]';

/**
 * Makes tool pairs whole: a tool result whose call is nowhere before it is removed, and a call with no
 * result gets a synthetic `[Tool execution was interrupted]` result, placed after the assistant message
 * and the tool results that directly follow it (core-spec §5.3 `patch_dangling_tool_calls`).
 */
export function repairToolPairs(messages: readonly Message[]): { messages: Message[]; patched: number; orphans: number } {
  const answered = new Set<string>();
  const called = new Set<string>();
  for (const m of messages) {
    if (m.role === 'assistant' && m.tool_calls !== undefined) for (const c of m.tool_calls) called.add(c.id);
    if (m.role === 'tool' && m.tool_call_id !== undefined && called.has(m.tool_call_id)) answered.add(m.tool_call_id);
  }
  const out: Message[] = [];
  const seen = new Set<string>();
  let patched = 0;
  let orphans = 0;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i] as Message;
    if (m.role === 'tool') {
      if (m.tool_call_id === undefined || !seen.has(m.tool_call_id)) {
        orphans++;
        continue;
      }
    }
    out.push(m);
    if (m.role === 'assistant' && m.tool_calls !== undefined) {
      for (const c of m.tool_calls) seen.add(c.id);
      const missing = m.tool_calls.filter((c) => !answered.has(c.id));
      if (missing.length === 0) continue;
      while (i + 1 < messages.length && (messages[i + 1] as Message).role === 'tool') {
        const next = messages[i + 1] as Message;
        i++;
        if (next.tool_call_id !== undefined && seen.has(next.tool_call_id)) out.push(next);
        else orphans++;
      }
      for (const c of missing) {
        out.push({ role: 'tool', content: [{ type: 'text', text: INTERRUPTED_TOOL_RESULT }], tool_call_id: c.id });
        patched++;
      }
    }
  }
  return { messages: out, patched, orphans };
}

/**
 * A preview of an oversized tool result (core-spec §5.5): unchanged below `threshold_tokens`
 * (`floor(bytes / 4)`), otherwise the first characters (Unicode scalar values) up to
 * `preview_max_chars` or `preview_max_lines` newlines, whichever comes first, plus a note.
 */
export function compactArtifact(text: string, config: ArtifactCompactionConfig): string {
  const estimate = Math.floor(utf8Length(text) / 4);
  if (estimate < config.threshold_tokens) return text;
  let chars = 0;
  let lines = 0;
  let end = 0;
  while (end < text.length && chars < config.preview_max_chars && lines < config.preview_max_lines) {
    const code = text.codePointAt(end) as number;
    end += code > 0xffff ? 2 : 1;
    chars++;
    if (code === 10) lines++;
  }
  return `${text.slice(0, end)}\n\n[Content compacted: original ~${estimate} tokens, showing first ${chars} chars]`;
}

/** Applies `compactArtifact` to the text blocks of tool results; other messages never change. */
export function compactArtifacts(messages: readonly Message[], config: ArtifactCompactionConfig): { messages: Message[]; compacted: number } {
  let compacted = 0;
  const out = messages.map((m) => {
    if (m.role !== 'tool') return m;
    let changed = false;
    const content = m.content.map((block): ContentBlock => {
      if (block.type !== 'text') return block;
      const text = compactArtifact(block.text, config);
      if (text === block.text) return block;
      changed = true;
      return { type: 'text', text };
    });
    if (!changed) return m;
    compacted++;
    return { ...m, content };
  });
  return { messages: out, compacted };
}

/** What one context transform did: shown in the run's events when anything changed. */
export interface ContextReport {
  readonly budget: number;
  readonly tool_tokens: number;
  readonly tokens_before: number;
  readonly tokens_after: number;
  readonly dropped: number;
  readonly compacted_artifacts: number;
  readonly patched_tool_calls: number;
  readonly removed_orphans: number;
}

/**
 * The request-side context transform (core-spec §5.3, with the book's rules): tool pairs are made
 * whole, oversized tool results become previews, then the oldest history is dropped to fit
 * `max_context − max_output − tool schemas`.
 */
export function transformContext(
  messages: readonly Message[],
  tools: readonly ToolDescriptor[],
  policy: ContextWindowPolicy,
  options: { readonly artifact: ArtifactCompactionConfig; readonly tokenizer?: Tokenizer },
): { messages: Message[]; report: ContextReport } {
  const tokenizer = options.tokenizer ?? byteHeuristicTokenizer;
  const repaired = repairToolPairs(messages);
  const artifacts = compactArtifacts(repaired.messages, options.artifact);
  const toolTokens = tokenizer.toolTokens(tools);
  const budget = historyBudget(policy, toolTokens);
  let before = 0;
  for (const m of messages) before += tokenizer.messageTokens(m);
  const truncated = truncateMessages(artifacts.messages, { budget, minRecent: policy.min_recent_messages, tokenizer });
  return {
    messages: truncated.messages,
    report: {
      budget,
      tool_tokens: toolTokens,
      tokens_before: before,
      tokens_after: truncated.tokens,
      dropped: truncated.dropped,
      compacted_artifacts: artifacts.compacted,
      patched_tool_calls: repaired.patched,
      removed_orphans: repaired.orphans,
    },
  };
}

export const contextChanged = (r: ContextReport): boolean => r.dropped > 0 || r.compacted_artifacts > 0 || r.patched_tool_calls > 0 || r.removed_orphans > 0;
