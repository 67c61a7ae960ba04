import * as acp from '@agentclientprotocol/sdk';
import type { AgentEvent } from '../contract/event.ts';
import type { Result } from '../contract/result.ts';
import { ACP_INTERNAL_ERROR, initialAcpState, finishAcp, transcodeAcp, type AcpMessage } from '../protocols/acp/encoder.ts';
import { decisionFor, type Decision } from '../runtime/run-loop.ts';

/** A run the ACP host drives: its decisions go in while it is parked on a suspension. */
export interface InteractiveRun {
  decide(decisions: readonly Decision[]): Result<void, unknown>;
  /** `true` once the run is parked waiting for decisions, `false` if it ends first. */
  parked(): Promise<boolean>;
  readonly done: Promise<unknown>;
}

/** What the ACP agent runs: one agent, started per prompt, with the host's clock and ids. */
export interface InteractiveHost {
  readonly name: string;
  now(): number;
  newId(): string;
  start(message: string, emit: (event: AgentEvent) => void, signal: AbortSignal): Promise<InteractiveRun>;
}

/**
 * An ACP v1 agent (the SDK's `acp.agent()`): `initialize`, `session/new`, `session/prompt` (the run's
 * events through the ACP transcoder: `session/update` notifications, a `session/request_permission`
 * for each suspended call whose answer becomes the call's decision, then the stop reason) and
 * `session/cancel` (the run is cancelled; the prompt answers `cancelled`). See docs/protocols/acp.md.
 */
export function acpAgent(host: InteractiveHost): ReturnType<typeof acp.agent> {
  const sessions = new Map<string, AbortController | undefined>();
  return acp
    .agent({ name: host.name })
    .onRequest(acp.methods.agent.initialize, () => ({ protocolVersion: acp.PROTOCOL_VERSION, agentCapabilities: { loadSession: false }, authMethods: [] }))
    .onRequest(acp.methods.agent.session.new, () => {
      const sessionId = host.newId();
      sessions.set(sessionId, undefined);
      return { sessionId };
    })
    .onNotification(acp.methods.agent.session.cancel, ({ params }) => sessions.get(params.sessionId)?.abort())
    .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
      const sessionId = params.sessionId;
      if (!sessions.has(sessionId)) throw acp.RequestError.invalidParams({ sessionId }, `unknown session ${sessionId}`);
      const text = params.prompt.map((b) => (b.type === 'text' ? b.text : '')).join('');
      if (text.trim() === '') throw acp.RequestError.invalidParams({ prompt: params.prompt }, 'prompt: no text');
      const controller = new AbortController();
      sessions.set(sessionId, controller);
      let state = initialAcpState();
      let final: AcpMessage | undefined;
      let sent: Promise<unknown> = Promise.resolve();
      let resolveRun: (run: InteractiveRun) => void = () => undefined;
      const runP = new Promise<InteractiveRun>((resolve) => (resolveRun = resolve));
      const deliver = async (m: AcpMessage): Promise<void> => {
        if (m.kind === 'update') await client.notify(acp.methods.client.session.update, { sessionId, update: m.update } as never);
        else if (m.kind === 'permission') {
          const answer = await client.request(acp.methods.client.session.requestPermission, { sessionId, ...m.params } as never);
          const approved = answer.outcome.outcome === 'selected' && answer.outcome.optionId === 'approve';
          const toolCallId = (m.params['toolCall'] as { toolCallId: string }).toolCallId;
          const decision = approved
            ? decisionFor(toolCallId, 'resume', host.now(), { decisionId: m.id, result: { approved: true } })
            : decisionFor(toolCallId, 'cancel', host.now(), { decisionId: m.id, result: { approved: false }, reason: 'rejected' });
          // The run parks right after it reports the suspension; a run that ended needs no answer.
          const run = await runP;
          if (await run.parked()) run.decide([decision]);
        } else final = m;
      };
      const emit = (event: AgentEvent): void => {
        const [next, out] = transcodeAcp(state, event);
        state = next;
        for (const m of out) sent = sent.then(() => deliver(m));
      };
      try {
        const run = await host.start(text, emit, controller.signal);
        resolveRun(run);
        await run.done;
        await sent;
      } finally {
        sessions.set(sessionId, undefined);
      }
      // A turn cancelled while parked on a permission ends without a further event: ACP wants `cancelled`.
      if (controller.signal.aborted && final?.kind !== 'error') return { stopReason: 'cancelled' as const };
      for (const m of finishAcp(state)) final ??= m;
      if (final?.kind === 'response') return final.result;
      throw new acp.RequestError(final?.kind === 'error' ? final.error.code : ACP_INTERNAL_ERROR, final?.kind === 'error' ? final.error.message : 'agent run failed');
    });
}
