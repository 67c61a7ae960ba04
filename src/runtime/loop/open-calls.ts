import type { AgentEvent } from '../../contract/event.ts';
import { ToolResults } from '../../contract/tool.ts';
import { andThen, eachInOrder, type MaybePromise } from '../maybe-promise.ts';

/**
 * The tool calls announced and not yet closed, in announcement order. Two parallel lists rather than
 * a map: a step opens and closes a call or two, and removing from a small map reallocates its table.
 */
export class OpenCalls {
  readonly #ids: string[] = [];
  readonly #names: string[] = [];

  get size(): number {
    return this.#ids.length;
  }

  add(id: string, name: string): void {
    const at = this.#ids.indexOf(id);
    if (at >= 0) this.#names[at] = name;
    else {
      this.#ids.push(id);
      this.#names.push(name);
    }
  }

  /** Removes the call, keeping the order of the others (shifted down in place: nothing allocated). */
  remove(id: string): void {
    const at = this.#ids.indexOf(id);
    if (at < 0) return;
    for (let i = at; i < this.#ids.length - 1; i++) {
      this.#ids[i] = this.#ids[i + 1] as string;
      this.#names[i] = this.#names[i + 1] as string;
    }
    this.#ids.pop();
    this.#names.pop();
  }

  list(): { id: string; name: string }[] {
    return this.#ids.map((id, i) => ({ id, name: this.#names[i] as string }));
  }
}

/**
 * Closes calls as failed with `message` (a stream that ended early, a run that stopped before its
 * tools): a `tool_call_done` each, in order.
 */
export function closeCalls(
  host: { emit(event: AgentEvent): Promise<void> | undefined },
  calls: readonly { id: string; name: string }[],
  message: string,
): MaybePromise<undefined> {
  return eachInOrder(calls, (call) =>
    andThen(
      host.emit({ event_type: 'tool_call_done', id: call.id, message_id: '', result: ToolResults.error(call.name, message), outcome: 'failed' }),
      () => undefined,
    ),
  );
}
