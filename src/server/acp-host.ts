import * as acp from '@agentclientprotocol/sdk';
import type { AgentEvent } from '../contract/event.ts';
import { messageText, type Message } from '../contract/message.ts';
import type { Result } from '../contract/result.ts';
import { ACP_INTERNAL_ERROR, initialAcpState, finishAcp, transcodeAcp, type AcpMessage } from '../protocols/acp/encoder.ts';
import { decisionFor, type Decision } from '../contract/decision.ts';
import { dispositionOf, scheduleOf } from '../contract/tool.ts';
import { sleepFor } from '../runtime/env.ts';

/** A run the ACP host drives: its decisions go in while it is parked on a suspension. */
export interface InteractiveRun {
  decide(decisions: readonly Decision[]): Result<void, unknown>;
  /** `true` once the run is parked waiting for decisions, `false` if it ends first. */
  parked(): Promise<boolean>;
  readonly done: Promise<unknown>;
}

/**
 * What the ACP agent runs: one agent, with the host's clock. A session is a conversation: its
 * prompts run one after another on one thread (each sees the turns before it).
 */
export interface InteractiveHost {
  readonly name: string;
  now(): number;
  /** Waits `ms` on the host's clock (rejects once `signal` aborts): a scheduled call's wait; a timer by default. */
  sleep?(ms: number, signal: AbortSignal): Promise<void>;
  /** Opens a session (its thread) and returns its id. */
  newSession(): string;
  /** The conversation of a session so far; `undefined` for a session this host does not know. */
  history(sessionId: string): Promise<readonly Message[] | undefined>;
  start(sessionId: string, message: string, emit: (event: AgentEvent) => void, signal: AbortSignal): Promise<InteractiveRun>;
}

/**
 * What the model reads when it calls a client tool in an ACP turn: ACP gives the agent no way to have
 * its client (an editor) run one of the agent's tools, so the call fails at once rather than wait for
 * a result that cannot come.
 */
export const acpClientToolRefusal = (toolName: string): string =>
  `Tool '${toolName}' runs on the client, and an ACP client runs no tools for the agent: the call was not made`;

/** The longest delay a timer keeps (2³¹−1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * An ACP v1 agent (the SDK's `acp.agent()`): `initialize`, `session/new`, `session/prompt` (the run's
 * events through the ACP transcoder: `session/update` notifications, a `session/request_permission`
 * for each suspended call whose answer becomes the call's decision — a client tool's call is failed
 * instead, `acpClientToolRefusal` — then the stop reason) and
 * `session/cancel` (the run is cancelled; the prompt answers `cancelled`). A session keeps its
 * thread: every prompt continues the conversation. See docs/protocols/acp.md.
 */
export function acpAgent(host: InteractiveHost): ReturnType<typeof acp.agent> {
  const sessions = new Map<string, AbortController | undefined>();
  return acp
    .agent({ name: host.name })
    .onRequest(acp.methods.agent.initialize, () => ({ protocolVersion: acp.PROTOCOL_VERSION, agentCapabilities: { loadSession: true }, authMethods: [] }))
    .onRequest(acp.methods.agent.session.new, () => {
      const sessionId = host.newSession();
      sessions.set(sessionId, undefined);
      return { sessionId };
    })
    .onRequest(acp.methods.agent.session.load, async ({ params, client }) => {
      const history = await host.history(params.sessionId);
      if (history === undefined) throw acp.RequestError.invalidParams({ sessionId: params.sessionId }, `unknown session ${params.sessionId}`);
      if (!sessions.has(params.sessionId)) sessions.set(params.sessionId, undefined);
      for (const update of historyUpdates(history)) await client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update } as never);
      return {};
    })
    .onNotification(acp.methods.agent.session.cancel, ({ params }) => sessions.get(params.sessionId)?.abort())
    .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
      const sessionId = params.sessionId;
      if (!sessions.has(sessionId)) throw acp.RequestError.invalidParams({ sessionId }, `unknown session ${sessionId}`);
      if (sessions.get(sessionId) !== undefined) throw acp.RequestError.invalidRequest({ sessionId }, `session ${sessionId} is in a turn already`);
      const text = params.prompt.map((b) => (b.type === 'text' ? b.text : '')).join('');
      if (text.trim() === '') throw acp.RequestError.invalidParams({ prompt: params.prompt }, 'prompt: no text');
      const controller = new AbortController();
      sessions.set(sessionId, controller);
      let state = initialAcpState();
      let final: AcpMessage | undefined;
      let sent: Promise<unknown> = Promise.resolve();
      let resolveRun: (run: InteractiveRun) => void = () => undefined;
      const runP = new Promise<InteractiveRun>((resolve) => (resolveRun = resolve));
      /** The client tools' calls the run waits on, id → tool name: the editor is not asked about them. */
      const clientCalls = new Map<string, string>();
      const deliver = async (m: AcpMessage): Promise<void> => {
        if (m.kind === 'update') await client.notify(acp.methods.client.session.update, { sessionId, update: m.update } as never);
        else if (m.kind === 'permission') {
          const toolCallId = (m.params['toolCall'] as { toolCallId: string }).toolCallId;
          const clientTool = clientCalls.get(toolCallId);
          // A client tool's call is not asked about: the editor cannot run it, and allowing it would
          // make the approval the tool's result. It fails with words the model reads (`{error}` is a
          // client's failed result), and the turn goes on.
          const approved =
            clientTool === undefined &&
            (await client
              .request(acp.methods.client.session.requestPermission, { sessionId, ...m.params } as never)
              .then((answer) => answer.outcome.outcome === 'selected' && answer.outcome.optionId === 'approve'));
          const decision =
            clientTool !== undefined
              ? decisionFor(toolCallId, 'resume', host.now(), { decisionId: m.id, result: { error: acpClientToolRefusal(clientTool) } })
              : approved
                ? decisionFor(toolCallId, 'resume', host.now(), { decisionId: m.id, result: { approved: true } })
                : decisionFor(toolCallId, 'cancel', host.now(), { decisionId: m.id, result: { approved: false }, reason: 'rejected' });
          // The run parks right after it reports the suspension; a run that ended needs no answer.
          const run = await runP;
          if (await run.parked()) run.decide([decision]);
        } else final = m;
      };
      // A call scheduled for a time is woken here when it comes; one waiting for a trigger only has
      // no route to it over stdio, so it waits until the turn is cancelled.
      const wakes = new AbortController();
      const sleep = host.sleep?.bind(host) ?? sleepFor;
      const wake = async (callId: string, notBefore: number): Promise<void> => {
        try {
          // A timer holds at most 2³¹−1 ms (longer ones fire at once): a far time is waited for in parts.
          for (let left = notBefore - host.now(); left > 0; left = notBefore - host.now()) await sleep(Math.min(left, MAX_TIMER_MS), wakes.signal);
        } catch {
          return;
        }
        const run = await runP;
        if (await run.parked()) run.decide([decisionFor(callId, 'resume', host.now(), { reason: 'its scheduled time came' })]);
      };
      const emit = (event: AgentEvent): void => {
        if (event.event_type === 'tool_call_done' && event.outcome === 'suspended') {
          if (dispositionOf(event.result) === 'pending_client') clientCalls.set(event.id, event.result.suspension?.pending.name ?? event.result.tool_name);
          const notBefore = scheduleOf(event.result.suspension?.suspension)?.not_before;
          if (notBefore !== undefined) void wake(event.id, notBefore);
        }
        const [next, out] = transcodeAcp(state, event);
        state = next;
        for (const m of out) sent = sent.then(() => deliver(m));
      };
      try {
        const run = await host.start(sessionId, text, emit, controller.signal);
        resolveRun(run);
        await run.done;
        await sent;
      } finally {
        wakes.abort();
        sessions.set(sessionId, undefined);
      }
      // A turn cancelled while parked on a permission ends without a further event: ACP wants `cancelled`.
      if (controller.signal.aborted && final?.kind !== 'error') return { stopReason: 'cancelled' as const };
      for (const m of finishAcp(state)) final ??= m;
      if (final?.kind === 'response') return final.result;
      throw new acp.RequestError(
        final?.kind === 'error' ? final.error.code : ACP_INTERNAL_ERROR,
        final?.kind === 'error' ? final.error.message : 'agent run failed',
      );
    });
}

/**
 * A session's conversation as the updates `session/load` replays: user and agent text, and each tool
 * call (completed with its result, or still pending).
 */
function historyUpdates(messages: readonly Message[]): Record<string, unknown>[] {
  const results = new Map(messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, messageText(m)] as const));
  const out: Record<string, unknown>[] = [];
  for (const m of messages) {
    if (m.visibility === 'internal' || m.role === 'system' || m.role === 'tool') continue;
    const text = messageText(m);
    if (text !== '') out.push({ sessionUpdate: m.role === 'user' ? 'user_message_chunk' : 'agent_message_chunk', content: { type: 'text', text } });
    for (const call of m.tool_calls ?? []) {
      const result = results.get(call.id);
      out.push({
        sessionUpdate: 'tool_call',
        toolCallId: call.id,
        title: call.name,
        kind: 'other',
        status: result !== undefined ? 'completed' : 'pending',
        rawInput: call.arguments,
        ...(result !== undefined ? { content: [{ type: 'content', content: { type: 'text', text: result } }] } : {}),
      });
    }
  }
  return out;
}
