import type { JsonValue } from '../contract/json.ts';
import type { Message } from '../contract/message.ts';
import type { Decision } from './run-loop.ts';

/**
 * What a protocol request asks of the runtime, decoded: the thread (and run) it names, the new
 * messages, the decisions for suspended calls, and any client state. The server resolves the rest
 * (agent, dedupe against the stored thread) before it starts or resumes the run.
 */
export interface InboundRun {
  readonly threadId?: string;
  readonly runId?: string;
  readonly agentId?: string;
  /** New input, with the client's message id when it sent one (for dedupe). */
  readonly messages: readonly { readonly id?: string; readonly message: Message }[];
  readonly decisions: readonly Decision[];
  readonly state?: JsonValue;
}
