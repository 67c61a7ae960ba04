import type { AgentEvent } from '../../contract/event.ts';
import { unreachable } from '../../contract/never.ts';
import { ToolResults } from '../../contract/tool.ts';

/** What a call the model was still writing shows when the server stopped mid-inference. */
export const CUT_WHILE_WRITING = '[Tool call not executed: the server stopped while the model was writing it]';

/**
 * What a call shows whose response had been written when the server stopped (its batch had begun):
 * a run taken up inside that batch may still tell its outcome, in the step it opens again.
 */
export const CUT_BEFORE_OUTCOME = '[Tool call not finished: the server stopped before its outcome was told]';

/**
 * Where a run's stream stood when the process writing it stopped, followed one frame at a time:
 * whether a step is open, the calls announced in it and not yet done (in announcement order), and
 * whether the step's inference had completed. A `run_start` begins a new segment; a `run_finish`
 * ends every block. A view that begins inside a step (a ring that let its start go) is in that step
 * from its first event the model writes.
 */
export class CutStream {
  /** Whether the stream has shown where a step begins or ends. */
  #placed = false;
  #open = false;
  #inferred = false;
  /** Announced and not done, by id (a `Map` keeps their announcement order). */
  readonly #calls = new Map<string, string>();

  note(event: AgentEvent): void {
    switch (event.event_type) {
      case 'run_start':
      case 'run_finish':
      case 'step_end':
        this.#placed = true;
        this.#open = false;
        this.#inferred = false;
        this.#calls.clear();
        return;
      case 'step_start':
        this.#placed = true;
        this.#open = true;
        this.#inferred = false;
        this.#calls.clear();
        return;
      case 'tool_call_start':
      case 'tool_call_ready':
        this.#inStep();
        // A call's name may come again with its arguments; it keeps its place.
        if (this.#open) this.#calls.set(event.id, event.name);
        return;
      case 'tool_call_done':
        this.#calls.delete(event.id);
        return;
      case 'inference_complete':
        this.#inStep();
        this.#inferred = true;
        return;
      case 'text_delta':
      case 'reasoning_delta':
      case 'tool_call_delta':
        this.#inStep();
        return;
      case 'tool_call_stream_delta':
      case 'reasoning_encrypted_value':
      case 'messages_snapshot':
      case 'activity_snapshot':
      case 'activity_delta':
      case 'tool_call_resumed':
      case 'state_snapshot':
      case 'state_delta':
      case 'error':
        return;
      default:
        unreachable(event, 'agent event');
    }
  }

  /** What the model writes is written inside a step: a view that had not placed one yet is in it. */
  #inStep(): void {
    if (this.#placed) return;
    this.#placed = true;
    this.#open = true;
  }

  /**
   * What closes the stream as it stands, as the run loop closes a stream cut mid-inference: a failed
   * `tool_call_done` for each call of the open step not done yet and not among `told`, in order, then its `step_end`.
   * Nothing when no step is open. The run goes on afterwards: no `run_finish`.
   */
  closers(told: ReadonlySet<string> = NONE): AgentEvent[] {
    if (!this.#open) return [];
    const message = this.#inferred ? CUT_BEFORE_OUTCOME : CUT_WHILE_WRITING;
    const out: AgentEvent[] = [];
    for (const [id, name] of this.#calls)
      if (!told.has(id)) out.push({ event_type: 'tool_call_done', id, message_id: '', result: ToolResults.error(name, message), outcome: 'failed' });
    out.push({ event_type: 'step_end' });
    return out;
  }
}

const NONE: ReadonlySet<string> = new Set();

/**
 * The closers of a run's events, in order (`CutStream.closers`). `told`: calls the run taken up will
 * tell the outcome of itself (its stored batch holds them: it reports each of its calls again in the
 * step it opens again) — closed here too, they would be done twice.
 */
export function closersOf(events: Iterable<AgentEvent>, told?: ReadonlySet<string>): AgentEvent[] {
  const cut = new CutStream();
  for (const event of events) cut.note(event);
  return cut.closers(told);
}
