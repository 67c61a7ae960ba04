import {
  describeFinding,
  errorLine,
  finding,
  multiTurnFindings,
  schemaProblem,
  sseFrames,
  sseJson,
  type Finding,
  type Frame,
  type ToolMention,
} from '../findings.ts';
import { asSchema, parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema, validateUIMessages, type UIMessage, type UIMessageChunk } from 'ai';

/**
 * The official judge of the AI SDK v6 UI message stream (conformance-plan §2): every `data:` frame
 * through `uiMessageChunkSchema`, the whole body through `parseJsonEventStream` and
 * `readUIMessageStream({terminateOnError: true})`, the final message through `validateUIMessages`.
 * Its blind spots are checked here too: the `[DONE]` ending and nothing after a terminal chunk
 * but a new `start` (after an `error`, only `finish-step` and `finish`).
 */
export interface Verdict {
  readonly chunks: UIMessageChunk[];
  readonly message: UIMessage | undefined;
  readonly streamError: string | undefined;
  /** What was found, check by check, with the frame at fault. */
  readonly findings: Finding[];
  readonly problems: string[];
  /** The tool calls the body names, for the `multi-turn` check. */
  readonly tools: ToolMention[];
}

export interface AiSdkTurn {
  /** The assistant message the response continues (an answered approval), as the chat passes it on. */
  readonly message?: UIMessage;
  /** Tool calls announced in earlier turns of the conversation, by id. */
  readonly known?: ReadonlySet<string>;
}

type Part = 'text' | 'reasoning';
const PARTS: Readonly<Record<string, [Part, 'start' | 'delta' | 'end']>> = {
  'text-start': ['text', 'start'],
  'text-delta': ['text', 'delta'],
  'text-end': ['text', 'end'],
  'reasoning-start': ['reasoning', 'start'],
  'reasoning-delta': ['reasoning', 'delta'],
  'reasoning-end': ['reasoning', 'end'],
};
const TOOL_OUTPUTS = new Set(['tool-output-available', 'tool-output-error', 'tool-output-denied', 'tool-approval-request']);

/**
 * The lifecycle of the chunks: a delta or end only for a part started and not ended, a tool call's
 * input streamed only between its `tool-input-start` and its `tool-input-available` (or
 * `tool-input-error`), under one name; an output only for a call announced in this turn or an
 * earlier one; every part and tool input closed before `finish` or the end of the body (an `error`
 * or `abort` ends what is open).
 */
function lifecycle(
  chunks: readonly { readonly chunk: UIMessageChunk; readonly frame: Frame }[],
  known: ReadonlySet<string>,
): { findings: Finding[]; tools: ToolMention[] } {
  const findings: Finding[] = [];
  const tools: ToolMention[] = [];
  const open = new Map<string, Frame>();
  const inputs = new Map<string, { readonly name: string; readonly frame: Frame }>();
  const announced = new Map<string, string>();
  const close = (at: Frame | undefined, why: string): void => {
    for (const [key, frame] of open) findings.push(finding('closure', `${key} opened here is never ended (${why})`, frame));
    for (const [id, { name, frame }] of inputs)
      findings.push(finding('closure', `the input of tool call ${id} (${name}) opened here is never completed (${why})`, frame));
    void at;
    open.clear();
    inputs.clear();
  };
  for (const { chunk, frame } of chunks) {
    const c = chunk as { type: string; id?: string; toolCallId?: string; toolName?: string };
    const part = PARTS[c.type];
    if (part !== undefined) {
      const key = `${part[0]} part ${c.id ?? ''}`;
      if (part[1] === 'start') {
        if (open.has(key)) findings.push(finding('ordering', `${c.type} for ${key}, which is already open`, frame));
        open.set(key, frame);
      } else if (!open.has(key)) findings.push(finding('ordering', `${c.type} for ${key}, which was never started (or is already ended)`, frame));
      else if (part[1] === 'end') open.delete(key);
      continue;
    }
    if (c.type === 'tool-input-start' || c.type === 'tool-input-delta' || c.type === 'tool-input-available' || c.type === 'tool-input-error') {
      const id = c.toolCallId ?? '';
      const name = c.toolName;
      if (name !== undefined) {
        tools.push({ id, name, frame });
        const before = announced.get(id);
        if (before !== undefined && before !== name) findings.push(finding('ordering', `tool call ${id} is renamed from ${before} to ${name}`, frame));
        announced.set(id, name);
      }
      const streaming = inputs.get(id);
      if (c.type === 'tool-input-start') {
        if (streaming !== undefined) findings.push(finding('ordering', `tool-input-start for tool call ${id}, whose input is already streaming`, frame));
        inputs.set(id, { name: name ?? '', frame });
      } else if (c.type === 'tool-input-delta') {
        if (streaming === undefined)
          findings.push(finding('ordering', `tool-input-delta for tool call ${id}, whose input was never started (or is complete)`, frame));
      } else inputs.delete(id);
      continue;
    }
    if (TOOL_OUTPUTS.has(c.type)) {
      const id = c.toolCallId ?? '';
      // An output settles the call (the client moves its part to a final state), streaming input or not.
      if (c.type !== 'tool-approval-request') inputs.delete(id);
      if (!announced.has(id) && !known.has(id)) findings.push(finding('ordering', `${c.type} for tool call ${id}, which was never announced`, frame));
      continue;
    }
    if (c.type === 'finish') close(frame, 'the stream finishes');
    else if (c.type === 'error' || c.type === 'abort') {
      open.clear();
      inputs.clear();
    }
  }
  close(undefined, 'the body ends');
  return { findings, tools };
}

export async function judgeAiSdk(body: string, turn: AiSdkTurn = {}): Promise<Verdict> {
  const findings: Finding[] = [];
  const frames = sseFrames(body);
  const last = frames.at(-1);
  if (last?.text !== 'data: [DONE]') findings.push(finding('terminal', 'the body does not end with data: [DONE]', last));
  const schema = asSchema(uiMessageChunkSchema);
  // A schema made from a zod schema always validates; the check lets the type say so.
  if (schema.validate === undefined) throw new Error('uiMessageChunkSchema has no validator');
  const read: { chunk: UIMessageChunk; frame: Frame }[] = [];
  for (const frame of frames) {
    if (frame.text === 'data: [DONE]') {
      if (frame !== last) findings.push(finding('terminal', 'data: [DONE] before the end of the body', frame));
      continue;
    }
    const json = sseJson(frame);
    if ('finding' in json) {
      findings.push(json.finding);
      continue;
    }
    const value = json.value;
    const r = await schema.validate(value);
    if (!r.success) findings.push(finding('schema', `uiMessageChunkSchema rejects it: ${schemaProblem(r.error)}`, frame));
    else read.push({ chunk: r.value, frame });
  }
  const chunks = read.map((r) => r.chunk);
  // Nothing after a terminal chunk but a new run (`start`). The terminal chunk is `finish`; an
  // `error` is followed by nothing but `finish-step` and `finish` (as `streamText` sends them), or
  // ends the segment itself.
  let terminal = false;
  let errored = false;
  let terminals = 0;
  for (const { chunk: c, frame } of read) {
    if (terminal && c.type !== 'start') findings.push(finding('ordering', `${c.type} after the terminal chunk`, frame));
    else if (errored && c.type !== 'start' && c.type !== 'finish-step' && c.type !== 'finish')
      findings.push(finding('ordering', `${c.type} after an error chunk`, frame));
    if (c.type === 'start') {
      if (errored && !terminal) terminals++;
      terminal = false;
      errored = false;
    }
    if (c.type === 'error') errored = true;
    if (c.type === 'finish') {
      terminal = true;
      terminals++;
    }
  }
  if (errored && !terminal) terminals++;
  if (terminals === 0) findings.push(finding('terminal', 'no terminal chunk (finish or error)'));
  const starts = chunks.filter((c) => c.type === 'start').length;
  if (terminals !== starts) findings.push(finding('terminal', `${starts} start chunk(s) but ${terminals} terminal chunk(s)`));
  const life = lifecycle(read, turn.known ?? new Set());
  findings.push(...life.findings);

  const stream = parseJsonEventStream({ stream: new Blob([body]).stream(), schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({
      transform(r, controller) {
        if (!r.success) throw r.error;
        controller.enqueue(r.value);
      },
    }),
  );
  let message: UIMessage | undefined;
  let streamError: string | undefined;
  const warn = console.warn;
  console.warn = (...args: unknown[]) => void findings.push(finding('client', `the client warned: ${args.map(String).join(' ').slice(0, 200)}`));
  try {
    for await (const m of readUIMessageStream({
      stream,
      terminateOnError: true,
      ...(turn.message !== undefined ? { message: structuredClone(turn.message) } : {}),
    }))
      message = m;
  } catch (e) {
    streamError = errorLine(e);
  } finally {
    console.warn = warn;
  }
  // An `error` chunk ends the reading by design (terminateOnError); any other failure is the client's.
  if (streamError !== undefined && !chunks.some((c) => c.type === 'error'))
    findings.push(finding('client', `the client's stream reader fails: ${streamError}`));
  if (message !== undefined) {
    try {
      // The client answers an approval request itself (addToolApprovalResponse) before the stream
      // goes on; a stream replayed alone lacks that step, so the judge plays the client's part.
      await validateUIMessages({ messages: [answered(message)] });
    } catch (e) {
      findings.push(finding('client', `validateUIMessages rejects the message: ${e instanceof Error ? e.message : String(e)}`));
    }
  }
  return { chunks, message, streamError, findings, problems: findings.map(describeFinding), tools: life.tools };
}

/** The message with every approval the stream went past answered, as the chat answers it. */
export function answered(message: UIMessage, approved = true): UIMessage {
  return {
    ...message,
    parts: message.parts.map((p) => {
      const part = p as { state?: string; approval?: { id: string; approved?: boolean } };
      if (part.approval === undefined || part.approval.approved !== undefined || part.state === 'approval-requested') return p;
      return { ...p, approval: { ...part.approval, approved: part.state !== 'output-denied' && approved } } as typeof p;
    }),
  };
}

/**
 * The turns of one conversation (the responses to one chat's requests, in order), each read as the
 * chat reads it: a response that continues an answered approval starts from the message before it.
 */
export async function judgeAiSdkTurns(bodies: readonly string[]): Promise<{ readonly findings: Finding[]; readonly frames: number[] }> {
  const findings: Finding[] = [];
  const frames: number[] = [];
  const mentions: ToolMention[][] = [];
  const known = new Set<string>();
  let previous: UIMessage | undefined;
  for (const [i, body] of bodies.entries()) {
    const waiting = previous?.parts.some((p) => (p as { state?: string }).state === 'approval-requested') === true;
    const v = await judgeAiSdk(body, { known, ...(waiting && previous !== undefined ? { message: approve(previous) } : {}) });
    findings.push(...v.findings.map((f) => ({ ...f, turn: i + 1 })));
    frames.push(sseFrames(body).length);
    mentions.push(v.tools);
    for (const t of v.tools) known.add(t.id);
    previous = v.message;
  }
  findings.push(...multiTurnFindings(mentions));
  return { findings, frames };
}

/**
 * The message with its pending approvals answered, as `addToolApprovalResponse` leaves it; which
 * answer was given is read from the response that follows (an output, or `tool-output-denied`).
 */
function approve(message: UIMessage): UIMessage {
  return {
    ...message,
    parts: message.parts.map((p) => {
      const part = p as { state?: string; approval?: { id: string } };
      return part.state === 'approval-requested' && part.approval !== undefined
        ? ({ ...p, state: 'approval-responded', approval: { id: part.approval.id } } as typeof p)
        : p;
    }),
  };
}
