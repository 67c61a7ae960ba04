import { AbstractAgent, runHttpRequest, transformHttpEventStream, verifyEvents, type BaseEvent, type Interrupt, type Message, type RunAgentInput } from '@ag-ui/client';
import { EventType } from '@ag-ui/core';
import { EventSchema } from '@ag-ui/core/schemas';
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
  readonly problems: string[];
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

export async function judgeAgUi(body: string): Promise<AgUiVerdict> {
  const problems: string[] = [];
  if (body.includes('\r')) problems.push('the body contains CR (the client splits frames on LF only)');
  const raw: unknown[] = [];
  for (const f of body.split('\n\n').filter((x) => x !== '')) {
    if (!f.startsWith('data: ')) {
      problems.push(`not a data frame: ${f.slice(0, 40)}`);
      continue;
    }
    try {
      raw.push(JSON.parse(f.slice(6)));
    } catch (e) {
      problems.push(`not JSON: ${f.slice(6, 60)} (${e instanceof Error ? e.message : String(e)})`);
    }
  }
  for (const e of raw) {
    const type = (e as { type?: unknown }).type;
    if (typeof type !== 'string' || !KNOWN.has(type)) problems.push(`unknown event type ${JSON.stringify(type)}`);
    const r = EventSchema.safeParse(e);
    if (!r.success) problems.push(`schema rejects ${JSON.stringify(e).slice(0, 120)}: ${r.error.message.slice(0, 200)}`);
  }

  // One terminal per run, nothing after it but a new run.
  let open = false;
  for (const e of raw as { type?: string }[]) {
    if (e.type === 'RUN_STARTED') {
      if (open) problems.push('RUN_STARTED inside a run');
      open = true;
    } else if (!open) problems.push(`${String(e.type)} outside a run`);
    else if (e.type === 'RUN_FINISHED' || e.type === 'RUN_ERROR') open = false;
  }
  if (open) problems.push('the stream ends inside a run (no RUN_FINISHED or RUN_ERROR)');

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
    for (const run of runsOf(events)) {
      const replay = new ReplayAgent(run);
      replay.messages = agent.messages;
      replay.state = agent.state;
      try {
        await replay.runAgent({ runId: 'judge' });
      } catch (e) {
        if (run.at(-1)?.type !== EventType.RUN_ERROR) problems.push(`runAgent: ${e instanceof Error ? e.message : String(e)}`);
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
  const last = events.at(-1) as (BaseEvent & { outcome?: { type?: string }; message?: string }) | undefined;
  const outcome = last?.type === EventType.RUN_FINISHED ? (last.outcome?.type ?? 'success') : undefined;
  const runError = last?.type === EventType.RUN_ERROR ? last.message : undefined;
  return { events, messages, state, pendingInterrupts, outcome, runError, problems };
}
