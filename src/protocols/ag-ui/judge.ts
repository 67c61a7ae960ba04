import {
  AbstractAgent,
  runHttpRequest,
  transformHttpEventStream,
  verifyEvents,
  type BaseEvent,
  type Interrupt,
  type Message,
  type RunAgentInput,
} from '@ag-ui/client';
import { EventType } from '@ag-ui/core';
import { EventSchema } from '@ag-ui/core/schemas';
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
import { from, lastValueFrom, toArray, type Observable } from 'rxjs';

/**
 * The official judge of an AG-UI 1.0 event stream (conformance-plan §3): the body through the
 * client's own HTTP transform and `verifyEvents`, every event through `EventSchema`, and the decoded
 * events through `AbstractAgent.runAgent()` (enforce, compat, chunk expansion, verification,
 * `defaultApplyEvents`). Its blind spots are checked here too: unknown types and keys, a renamed
 * tool call, a state patch that does not apply — which the client repairs or drops with only a
 * `console.warn` (every warning is collected as a problem) — CR in the framing, and exactly
 * one terminal event per run with nothing after it but a new `RUN_STARTED`.
 */
export interface AgUiVerdict {
  readonly events: BaseEvent[];
  /** What the client built: its messages, state, pending interrupts and the last run's outcome. */
  readonly messages: Message[];
  readonly state: unknown;
  readonly pendingInterrupts: Interrupt[];
  readonly outcome: string | undefined;
  /** The `RUN_ERROR` message, when the run ended in error. */
  readonly runError: string | undefined;
  /** What was found, check by check, with the frame at fault. */
  readonly findings: Finding[];
  readonly problems: string[];
  /** The tool calls the body names, for the `multi-turn` check. */
  readonly tools: ToolMention[];
}

const KNOWN = new Set<string>(Object.values(EventType));
const REPAIR = /^\[ag-ui\]\[(enforce|compat|transform)\]/;

class ReplayAgent extends AbstractAgent {
  readonly #events: BaseEvent[];
  constructor(events: BaseEvent[]) {
    super({ threadId: 'judge' });
    this.#events = events;
  }
  run(_input: RunAgentInput): Observable<BaseEvent> {
    return from(this.#events);
  }
}

/** Splits the run at its `RUN_STARTED` events: the client runs one run per `runAgent()`. */
function runsOf(events: BaseEvent[]): BaseEvent[][] {
  const runs: BaseEvent[][] = [];
  for (const e of events) {
    if (e.type === EventType.RUN_STARTED || runs.length === 0) runs.push([]);
    (runs.at(-1) as BaseEvent[]).push(e);
  }
  return runs;
}

/** The blocks of AG-UI: which event opens, continues and ends each, and the field naming it. */
const BLOCKS: Readonly<Record<string, readonly [string, 'start' | 'delta' | 'end', string]>> = {
  TEXT_MESSAGE_START: ['text message', 'start', 'messageId'],
  TEXT_MESSAGE_CONTENT: ['text message', 'delta', 'messageId'],
  TEXT_MESSAGE_END: ['text message', 'end', 'messageId'],
  TOOL_CALL_START: ['tool call', 'start', 'toolCallId'],
  TOOL_CALL_ARGS: ['tool call', 'delta', 'toolCallId'],
  TOOL_CALL_END: ['tool call', 'end', 'toolCallId'],
  REASONING_START: ['reasoning', 'start', 'messageId'],
  REASONING_END: ['reasoning', 'end', 'messageId'],
  REASONING_MESSAGE_START: ['reasoning message', 'start', 'messageId'],
  REASONING_MESSAGE_CONTENT: ['reasoning message', 'delta', 'messageId'],
  REASONING_MESSAGE_END: ['reasoning message', 'end', 'messageId'],
  THINKING_START: ['thinking', 'start', ''],
  THINKING_END: ['thinking', 'end', ''],
  THINKING_TEXT_MESSAGE_START: ['thinking message', 'start', ''],
  THINKING_TEXT_MESSAGE_CONTENT: ['thinking message', 'delta', ''],
  THINKING_TEXT_MESSAGE_END: ['thinking message', 'end', ''],
  STEP_STARTED: ['step', 'start', 'stepName'],
  STEP_FINISHED: ['step', 'end', 'stepName'],
};

/**
 * The lifecycle of the events, frame by frame: one terminal per run and nothing after it but a new
 * `RUN_STARTED`; a content, args or end event only for a block started and not ended; a tool call's
 * result only for a call started in this run or an earlier one; a tool call keeps its name; every
 * block closed before `RUN_FINISHED` or the end of the body (a `RUN_ERROR` ends what is open).
 */
function lifecycle(
  events: readonly { readonly event: { readonly type?: unknown; readonly [k: string]: unknown }; readonly frame: Frame }[],
  known: ReadonlySet<string>,
): { findings: Finding[]; tools: ToolMention[] } {
  const findings: Finding[] = [];
  const tools: ToolMention[] = [];
  const open = new Map<string, Frame>();
  const names = new Map<string, string>();
  let running = false;
  let runs = 0;
  const close = (why: string): void => {
    for (const [key, frame] of open) findings.push(finding('closure', `${key} opened here is never ended (${why})`, frame));
    open.clear();
  };
  for (const { event, frame } of events) {
    const type = String(event.type);
    if (type === 'RUN_STARTED') {
      if (running) findings.push(finding('terminal', 'RUN_STARTED inside a run (the run before has no RUN_FINISHED or RUN_ERROR)', frame));
      running = true;
      runs++;
      continue;
    }
    if (!running) findings.push(finding('ordering', `${type} ${runs === 0 ? 'before RUN_STARTED' : 'after the run ended'}`, frame));
    if (type === 'RUN_FINISHED') {
      close('the run finishes');
      running = false;
      continue;
    }
    if (type === 'RUN_ERROR') {
      open.clear();
      running = false;
      continue;
    }
    if (type === 'TOOL_CALL_START' || type === 'TOOL_CALL_CHUNK') {
      const id = String(event['toolCallId'] ?? '');
      const name = event['toolCallName'];
      if (typeof name === 'string') {
        tools.push({ id, name, frame });
        const before = names.get(id);
        if (before !== undefined && before !== name) findings.push(finding('ordering', `tool call ${id} is renamed from ${before} to ${name}`, frame));
        names.set(id, name);
      }
    }
    if (type === 'TOOL_CALL_RESULT') {
      const id = String(event['toolCallId'] ?? '');
      if (!names.has(id) && !known.has(id)) findings.push(finding('ordering', `TOOL_CALL_RESULT for tool call ${id}, which was never started`, frame));
      continue;
    }
    const block = BLOCKS[type];
    if (block === undefined) continue;
    const key = `${block[0]}${block[2] !== '' ? ` ${String(event[block[2]] ?? '')}` : ''}`;
    if (block[1] === 'start') {
      if (open.has(key)) findings.push(finding('ordering', `${type} for ${key}, which is already open`, frame));
      open.set(key, frame);
    } else if (!open.has(key)) findings.push(finding('ordering', `${type} for ${key}, which was never started (or is already ended)`, frame));
    else if (block[1] === 'end') open.delete(key);
  }
  if (running) findings.push(finding('terminal', 'the body ends inside a run (no RUN_FINISHED or RUN_ERROR)'));
  close('the body ends');
  return { findings, tools };
}

/** Where a response continues a conversation: its tool calls so far, and what the client holds. */
export interface AgUiTurn {
  readonly known?: ReadonlySet<string>;
  readonly messages?: Message[];
  readonly state?: unknown;
}

export async function judgeAgUi(body: string, turn: AgUiTurn = {}): Promise<AgUiVerdict> {
  const findings: Finding[] = [];
  if (body.includes('\r')) findings.push(finding('schema', 'the body contains CR (the client splits frames on LF only)'));
  const raw: { event: { type?: unknown; [k: string]: unknown }; frame: Frame }[] = [];
  for (const frame of sseFrames(body)) {
    const json = sseJson(frame);
    if ('finding' in json) {
      findings.push(json.finding);
      continue;
    }
    const event = json.value;
    const type = (event as { type?: unknown }).type;
    if (typeof type !== 'string' || !KNOWN.has(type)) findings.push(finding('schema', `unknown event type ${JSON.stringify(type)}`, frame));
    const r = EventSchema.safeParse(event);
    if (!r.success) findings.push(finding('schema', `EventSchema rejects it: ${schemaProblem(r.error)}`, frame));
    raw.push({ event: event as { type?: unknown }, frame });
  }
  const life = lifecycle(raw, turn.known ?? new Set());
  findings.push(...life.findings);
  const problems: string[] = [];

  const warn = console.warn;
  const error = console.error;
  // Every warning of the client is a repair or a drop (an [ag-ui] stage, a renamed tool call, a state
  // patch that did not apply): each is a problem.
  console.warn = (...args: unknown[]) => {
    const first = String(args[0]);
    problems.push(`client ${REPAIR.test(first) ? 'repaired the stream' : 'warned'}: ${first.slice(0, 200)}`);
  };
  // AbstractAgent logs a failed run before it rejects; the rejection is reported below.
  console.error = () => undefined;
  let events: BaseEvent[] = [];
  let messages: Message[] = [];
  let state: unknown;
  let pendingInterrupts: Interrupt[] = [];
  try {
    try {
      const http$ = runHttpRequest(async () => new Response(body, { headers: { 'content-type': 'text/event-stream' } }));
      events = await lastValueFrom(transformHttpEventStream(http$).pipe(verifyEvents(), toArray()));
    } catch (e) {
      problems.push(`verifyEvents: ${e instanceof Error ? e.message : String(e)}`);
    }
    const agent = new ReplayAgent([]);
    if (turn.messages !== undefined) agent.messages = structuredClone(turn.messages);
    if (turn.state !== undefined) agent.state = structuredClone(turn.state) as typeof agent.state;
    for (const run of runsOf(events)) {
      const replay = new ReplayAgent(run);
      replay.messages = agent.messages;
      replay.state = agent.state;
      try {
        await replay.runAgent({ runId: 'judge' });
      } catch (e) {
        if (run.at(-1)?.type !== EventType.RUN_ERROR) problems.push(`runAgent: ${errorLine(e)}`);
      }
      agent.messages = replay.messages;
      agent.state = replay.state;
      pendingInterrupts = replay.pendingInterrupts;
    }
    messages = agent.messages;
    state = agent.state;
  } finally {
    console.warn = warn;
    console.error = error;
  }
  findings.push(...problems.map((p) => finding('client', p)));
  const last = events.at(-1) as (BaseEvent & { outcome?: { type?: string }; message?: string }) | undefined;
  const outcome = last?.type === EventType.RUN_FINISHED ? (last.outcome?.type ?? 'success') : undefined;
  const runError = last?.type === EventType.RUN_ERROR ? last.message : undefined;
  return { events, messages, state, pendingInterrupts, outcome, runError, findings, problems: findings.map(describeFinding), tools: life.tools };
}

/** The turns of one conversation (the responses to one agent's runs, in order). */
export async function judgeAgUiTurns(bodies: readonly string[]): Promise<{ readonly findings: Finding[]; readonly frames: number[] }> {
  const findings: Finding[] = [];
  const frames: number[] = [];
  const mentions: ToolMention[][] = [];
  const known = new Set<string>();
  let held: { messages: Message[]; state: unknown } | undefined;
  for (const [i, body] of bodies.entries()) {
    const v = await judgeAgUi(body, { known, ...(held ?? {}) });
    held = { messages: v.messages, state: v.state };
    findings.push(...v.findings.map((f) => ({ ...f, turn: i + 1 })));
    frames.push(sseFrames(body).length);
    mentions.push(v.tools);
    for (const t of v.tools) known.add(t.id);
  }
  findings.push(...multiTurnFindings(mentions));
  return { findings, frames };
}
