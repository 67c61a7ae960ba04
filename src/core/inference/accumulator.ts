import type { JsonValue } from '../../contract/json.ts';
import type { ContentBlock, ToolCall } from '../../contract/message.ts';
import type { StopReason, StreamPart, StreamResult } from '../../contract/stream.ts';
import type { TokenUsage } from '../../contract/usage.ts';
import { unreachable } from '../../contract/never.ts';

interface PendingCall {
  readonly id: string;
  name: string;
  args: string;
  ready?: JsonValue;
}

/**
 * Folds streamed parts into a `StreamResult` (core-spec §3.11). Tool calls keep their start order;
 * a call whose argument text is not valid JSON is dropped and flagged `hasIncompleteToolCalls`;
 * empty argument text reads as `{}`. A cancelled stream finalises with no tool calls and `EndTurn`.
 */
export class StreamAccumulator {
  #text = '';
  #reasoning = '';
  readonly #calls: PendingCall[] = [];
  #usage: TokenUsage | undefined;
  #stopReason: StopReason | undefined;
  #incomplete = false;

  /** Adds one part; returns the call that became ready with it, if any (for `tool_call_ready`). */
  push(part: StreamPart): void {
    switch (part.type) {
      case 'text_delta':
        this.#text += part.delta;
        return;
      case 'reasoning_delta':
        this.#reasoning += part.delta;
        return;
      case 'reasoning_encrypted':
        return;
      case 'tool_call_start':
        if (this.#find(part.id) === undefined) this.#calls.push({ id: part.id, name: part.name, args: '' });
        return;
      case 'tool_call_delta': {
        const call = this.#find(part.id);
        if (call !== undefined) call.args += part.args_delta;
        return;
      }
      case 'tool_call_ready': {
        let call = this.#find(part.id);
        if (call === undefined) {
          call = { id: part.id, name: part.name, args: '' };
          this.#calls.push(call);
        }
        call.ready = part.arguments;
        return;
      }
      case 'usage':
        this.#usage = part.usage;
        return;
      case 'finish':
        this.#stopReason = part.stop_reason;
        if (part.has_incomplete_tool_calls === true) this.#incomplete = true;
        return;
      case 'response_metadata':
        // No content: what the provider said of itself is the loop's to read, for the tap.
        return;
      default:
        unreachable(part);
    }
  }

  /** Tool calls (in start order) whose arguments parse, with their parsed arguments. */
  readyCalls(): ToolCall[] {
    const out: ToolCall[] = [];
    for (const call of this.#calls) {
      const args = parseArgs(call);
      if (args !== undefined) out.push({ id: call.id, name: call.name, arguments: args });
    }
    return out;
  }

  /** The text received so far. */
  get text(): string {
    return this.#text;
  }

  finish(options?: { readonly cancelled?: boolean }): StreamResult {
    // Array literals, sized as they are filled: a push onto an empty array reserves room for many.
    const content: readonly ContentBlock[] = this.#text === '' ? NO_CONTENT : [{ type: 'text', text: this.#text }];
    const usage = this.#usage;
    if (options?.cancelled === true) return resultOf(content, this.#reasoning, usage, NO_CALLS, 'EndTurn', false);
    let incomplete = this.#incomplete;
    const calls = this.#calls;
    let toolCalls: readonly ToolCall[] = NO_CALLS;
    if (calls.length === 1) {
      const call = calls[0] as PendingCall;
      const args = parseArgs(call);
      if (args === undefined) incomplete = true;
      else toolCalls = [{ id: call.id, name: call.name, arguments: args }];
    } else if (calls.length > 1) {
      const out: ToolCall[] = [];
      for (const call of calls) {
        const args = parseArgs(call);
        if (args === undefined) incomplete = true;
        else out.push({ id: call.id, name: call.name, arguments: args });
      }
      toolCalls = out;
    }
    return resultOf(content, this.#reasoning, usage, toolCalls, this.#stopReason, incomplete);
  }

  #find(id: string): PendingCall | undefined {
    for (const call of this.#calls) if (call.id === id) return call;
    return undefined;
  }
}

/** What a result without text or without tool calls holds: one frozen empty list for all. */
const NO_CONTENT: readonly ContentBlock[] = Object.freeze([]);
const NO_CALLS: readonly ToolCall[] = Object.freeze([]);

function parseArgs(call: PendingCall): JsonValue | undefined {
  if (call.ready !== undefined) return call.ready;
  const args = call.args;
  // Text that opens with a printable ASCII character is not blank: no trimmed copy is needed to tell.
  const first = args.charCodeAt(0);
  if (!(first > 0x20 && first < 0x7f) && args.trim() === '') return {};
  try {
    return JSON.parse(args) as JsonValue;
  } catch {
    return undefined;
  }
}

/** The result with its optional fields present only when set, in one key order; no spreads (once per inference). */
function resultOf(
  content: readonly ContentBlock[],
  reasoning: string,
  usage: TokenUsage | undefined,
  toolCalls: readonly ToolCall[],
  stopReason: StopReason | undefined,
  hasIncompleteToolCalls: boolean,
): StreamResult {
  if (usage === undefined) {
    return stopReason === undefined
      ? { content, reasoning, toolCalls, hasIncompleteToolCalls }
      : { content, reasoning, toolCalls, stopReason, hasIncompleteToolCalls };
  }
  return stopReason === undefined
    ? { content, reasoning, usage, toolCalls, hasIncompleteToolCalls }
    : { content, reasoning, usage, toolCalls, stopReason, hasIncompleteToolCalls };
}
