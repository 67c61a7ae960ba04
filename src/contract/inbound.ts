import type { Decision } from './decision.ts';
import type { JsonValue } from './json.ts';
import type { Message } from './message.ts';
import type { ToolDescriptor } from './tool.ts';

/**
 * What a protocol request asks of the runtime, decoded: the thread (and run) it names, the new
 * messages, the decisions for suspended calls, and any client state. A protocol client sends its
 * whole history back, so `messages` and `decisions` are candidates: the server keeps the messages
 * the thread does not hold yet and the decisions for calls the thread actually waits on
 * (`planInbound`, src/server/inbound.ts).
 */
export interface InboundRun {
  readonly threadId?: string;
  readonly runId?: string;
  readonly agentId?: string;
  /** Input messages (user and system), with the client's message id when it sent one (for dedupe). */
  readonly messages: readonly { readonly id?: string; readonly message: Message }[];
  /** Every answer to a tool call the request carries (tool outputs, approvals, interrupt resumes). */
  readonly decisions: readonly Decision[];
  /** The calls whose answers are the client's own messages (AG-UI `tool` messages): a stream does not send their results back. */
  readonly held?: readonly string[];
  /** The client's state (its shared keys' values: `AgentSpec.client_state`), set as a run this request starts begins. */
  readonly state?: JsonValue;
  /**
   * Tools the client runs (AG-UI `tools`): offered to the model for a run this request starts; a
   * call to one parks the run until the client sends the call's result back (`RunRequest.clientTools`).
   */
  readonly clientTools?: readonly ToolDescriptor[];
  /** What the client says of its page (AG-UI `context`): offered to the model in a run this request starts. */
  readonly clientContext?: readonly { readonly description: string; readonly value: string }[];
  /**
   * The client's history ends with this message and asks for an answer to it: when nothing else is
   * new, the answer is generated again from there (AI SDK `regenerate-message`, an AG-UI history
   * ending with a user message the thread holds).
   */
  readonly regenerateFrom?: string;
  /**
   * Start the new turn even when the thread waits for a decision nobody gave: the waiting run is
   * cancelled (without it such a turn is refused, seed 001 §4.4).
   */
  readonly discardPause?: boolean;
}
