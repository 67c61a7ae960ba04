import type { InferenceOverride } from '../../contract/inference.ts';
import type { Message } from '../../contract/message.ts';
import type { ToolDescriptor } from '../../contract/tool.ts';
import type { ReportedRequest } from '../context.ts';
import { CANCELLATION, type RunSignal } from '../run-signal.ts';

/**
 * A step's request as the loop makes it: plain data, and a `signal` that asks the run for its
 * `AbortSignal` only when read (`RunSignal`: most providers never read it, and a run that is not
 * asked makes none). The getter is the class's: an accessor of each request's own would give every
 * request a hidden class of its own, hundreds of bytes and microseconds a step.
 */
export class LoopRequest implements ReportedRequest {
  readonly model: string;
  readonly messages: readonly Message[];
  readonly tools: readonly ToolDescriptor[];
  // Declared, not a field: a request without overrides has no `overrides` key at all.
  declare readonly overrides?: InferenceOverride;
  readonly threadId: string;
  readonly [CANCELLATION]: RunSignal;

  constructor(
    model: string,
    messages: readonly Message[],
    tools: readonly ToolDescriptor[],
    overrides: InferenceOverride | undefined,
    cancellation: RunSignal,
    threadId: string,
  ) {
    this.model = model;
    this.messages = messages;
    this.tools = tools;
    // Absent, not `undefined`, when there are none (as the request's readers have always seen it).
    if (overrides !== undefined) this.overrides = overrides;
    this.threadId = threadId;
    this[CANCELLATION] = cancellation;
  }

  get signal(): AbortSignal {
    return this[CANCELLATION].signal;
  }
}
