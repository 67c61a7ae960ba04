import * as acp from '@agentclientprotocol/sdk';
import { describe, expect, it } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { realEnv } from '../../src/runtime/env.ts';
import { acpAgent, type InteractiveHost } from '../../src/server/acp-host.ts';
import { laterTool, testServer } from '../support/server.ts';

/**
 * The ACP agent with a tool whose gate schedules its call (`ToolResults.scheduled`), driven by the
 * official ACP client over in-memory NDJSON streams: the client is asked nothing, sees the call
 * pending and why, and the turn goes on when the call's time comes.
 */
function scheduling(when: { readonly not_before?: number; readonly trigger?: boolean }) {
  const ran: unknown[] = [];
  const later = laterTool(when, ran, (d) => d.action);
  const s = testServer([{ tool_calls: [{ id: 'c1', name: 'later', arguments: { job: 'report' } }] }, { text: 'the report is out' }], { tools: [later] });
  const sleeps = realEnv();
  const t0 = Date.now();
  const host: InteractiveHost = {
    name: 'spec',
    // The host's clock starts at 0: a call scheduled for `not_before` ms waits that long for real.
    now: () => Date.now() - t0,
    sleep: (ms, signal) => sleeps.sleep(ms, signal),
    newSession: () => 't1',
    history: async () => [],
    async start(sessionId, message, emit, signal) {
      const started = await s.runtime.start(
        { agentId: 'agent', threadId: sessionId, messages: [Messages.user(message)] },
        { emit },
        { signal, waitForDecisions: true },
      );
      if (!started.ok) throw new Error(started.error.code);
      return started.value;
    },
  };
  return { host, ran };
}

/** One prompt through the official client; `cancelAfterMs` sends `session/cancel` that long after the prompt. */
async function turn(host: InteractiveHost, cancelAfterMs?: number) {
  const toAgent = new TransformStream<Uint8Array, Uint8Array>();
  const toClient = new TransformStream<Uint8Array, Uint8Array>();
  void acpAgent(host).connect(acp.ndJsonStream(toClient.writable, toAgent.readable));
  const updates: unknown[] = [];
  let permissions = 0;
  const stopReason = await acp
    .client({ name: 'spec' })
    .onRequest(acp.methods.client.session.requestPermission, () => {
      permissions++;
      return { outcome: { outcome: 'selected', optionId: 'approve' } };
    })
    .onNotification(acp.methods.client.session.update, ({ params }) => void updates.push(params.update))
    .connectWith(acp.ndJsonStream(toAgent.writable, toClient.readable), async (agent) => {
      await agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
      const { sessionId } = await agent.request(acp.methods.agent.session.new, { cwd: '/', mcpServers: [] });
      if (cancelAfterMs !== undefined) setTimeout(() => void agent.notify(acp.methods.agent.session.cancel, { sessionId }), cancelAfterMs);
      return (await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'send the report' }] })).stopReason;
    });
  return { stopReason, permissions, updates };
}

describe('the ACP agent and a scheduled call', () => {
  it('asks no permission, shows the call pending with when it goes on, wakes it at its time and ends the turn', async () => {
    const { host, ran } = scheduling({ not_before: 300 });
    const t0 = Date.now();
    const { stopReason, permissions, updates } = await turn(host);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    expect({ stopReason, permissions, ran }).toEqual({ stopReason: 'end_turn', permissions: 0, ran: ['resume'] });
    expect(updates).toContainEqual({
      sessionUpdate: 'tool_call_update',
      toolCallId: 'c1',
      status: 'pending',
      content: [{ type: 'content', content: { type: 'text', text: 'scheduled: waits until 1970-01-01T00:00:00.300Z' } }],
    });
    expect(updates.at(-1)).toEqual({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'the report is out' } });
  });

  it('keeps a call waiting for a trigger (no route reaches it over stdio) until the turn is cancelled', async () => {
    const { host, ran } = scheduling({ trigger: true });
    expect(await turn(host, 300)).toMatchObject({ stopReason: 'cancelled', permissions: 0 });
    expect(ran).toEqual([]);
  });

  it('waits for a far time in parts no timer cuts short (a timer holds at most 2³¹−1 ms), then wakes the call', async () => {
    const { host, ran } = scheduling({ not_before: 5_000_000_000 });
    let clock = 0;
    const waits: number[] = [];
    const far: InteractiveHost = {
      ...host,
      now: () => clock,
      sleep: async (ms) => {
        waits.push(ms);
        clock += ms;
      },
    };
    expect(await turn(far)).toMatchObject({ stopReason: 'end_turn', permissions: 0 });
    expect(waits).toEqual([2 ** 31 - 1, 2 ** 31 - 1, 5_000_000_000 - 2 * (2 ** 31 - 1)]);
    expect(ran).toEqual(['resume']);
  });

  it('wakes the call with a timer of its own for a host that gives no sleep', async () => {
    const { host, ran } = scheduling({ not_before: 200 });
    const { sleep: _given, ...withoutSleep } = host;
    expect(await turn(withoutSleep)).toMatchObject({ stopReason: 'end_turn', permissions: 0 });
    expect(ran).toEqual(['resume']);
  });
});
