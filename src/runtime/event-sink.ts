import type { AgentEvent } from '../contract/event.ts';

/** Where a run's events go. `emit` may be async; the loop awaits it, so events never reorder. */
export interface EventSink {
  emit(event: AgentEvent): void | Promise<void>;
}

/** Collects every event in memory (book: VecEventSink). */
export class VecEventSink implements EventSink {
  readonly events: AgentEvent[] = [];
  emit(event: AgentEvent): void {
    this.events.push(event);
  }
  /** Returns the events collected so far and forgets them. */
  take(): AgentEvent[] {
    return this.events.splice(0);
  }
}

/** A sink that forwards to a callback. */
export const callbackSink = (f: (event: AgentEvent) => void | Promise<void>): EventSink => ({ emit: f });

/** Forwards every event to each sink in order. */
export const fanOutSink = (...sinks: EventSink[]): EventSink => ({
  emit: async (event) => {
    for (const sink of sinks) await sink.emit(event);
  },
});
