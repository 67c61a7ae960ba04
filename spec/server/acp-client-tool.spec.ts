import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { describe, expect, it } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import type { ToolDescriptor } from '../../src/contract/tool.ts';
import type { ScriptStep } from '../../src/providers/scripted.ts';
import { clientTool } from '../../src/runtime/client-tool.ts';
import { acpAgent, acpClientToolRefusal, type InteractiveHost } from '../../src/server/acp-host.ts';
import { approvalTool } from '../support/runtime.ts';
import { testServer } from '../support/server.ts';

/**
 * A client tool (`clientTool`, an app's tool without `execute`) called in an ACP turn, driven by the
 * official ACP client over in-memory NDJSON streams. ACP has no way for the agent to have its client
 * (an editor) run a tool, so the editor is asked nothing: the call fails with an error that says so,
 * the model reads it, and the turn goes on to its end.
 */

const pickColor: ToolDescriptor = {
  id: 'pick_color',
  name: 'pick_color',
  description: 'Asks the user to pick a colour',
  parameters: { type: 'object', properties: { palette: { type: 'string' } }, required: ['palette'] },
};
const refusal = "Tool 'pick_color' runs on the client, and an ACP client runs no tools for the agent: the call was not made";

function clientToolHost(script: readonly ScriptStep[], spec: Parameters<typeof testServer>[1] = {}) {
  const s = testServer(script, { tools: [clientTool(pickColor), approvalTool], ...spec });
  const host: InteractiveHost = {
    name: 'spec',
    now: () => 0,
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
  return { s, host };
}

/** One prompt through the official client, which approves every permission it is asked. */
async function turn(host: InteractiveHost) {
  const toAgent = new TransformStream<Uint8Array, Uint8Array>();
  const toClient = new TransformStream<Uint8Array, Uint8Array>();
  void acpAgent(host).connect(acp.ndJsonStream(toClient.writable, toAgent.readable));
  const updates: unknown[] = [];
  const asked: string[] = [];
  const stopReason = await acp
    .client({ name: 'spec' })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      asked.push(params.toolCall.toolCallId);
      return { outcome: { outcome: 'selected', optionId: 'approve' } };
    })
    .onNotification(acp.methods.client.session.update, ({ params }) => void updates.push(params.update))
    .connectWith(acp.ndJsonStream(toAgent.writable, toClient.readable), async (agent) => {
      await agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
      const { sessionId } = await agent.request(acp.methods.agent.session.new, { cwd: '/', mcpServers: [] });
      return (await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'pick a colour' }] })).stopReason;
    });
  return { stopReason, asked, updates };
}

const failedUpdate = {
  sessionUpdate: 'tool_call_update',
  toolCallId: 'c1',
  status: 'failed',
  rawOutput: { error: refusal },
  content: [{ type: 'content', content: { type: 'text', text: JSON.stringify({ error: refusal }) } }],
};

describe('ACP: a call to a client tool', () => {
  it('asks the editor nothing: the call fails saying this client runs no tools, the model reads it, and the turn ends', async () => {
    const { s, host } = clientToolHost([
      { tool_calls: [{ id: 'c1', name: 'pick_color', arguments: { palette: 'warm' } }] },
      { text: 'I cannot pick one here.' },
    ]);
    const { stopReason, asked, updates } = await turn(host);
    expect({ stopReason, asked }).toEqual({ stopReason: 'end_turn', asked: [] });
    expect(updates).toEqual([
      { sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'pick_color', kind: 'other', status: 'pending' },
      { sessionUpdate: 'tool_call_update', toolCallId: 'c1', rawInput: { palette: 'warm' } },
      failedUpdate,
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'I cannot pick one here.' } },
    ]);
    expect(s.llm.requests[1]?.messages.find((m) => m.role === 'tool')).toMatchObject({ tool_call_id: 'c1', content: [{ type: 'text', text: refusal }] });
  });

  it('beside an approval (parallel modes) asks the editor about the approval alone', async () => {
    const { s, host } = clientToolHost(
      [
        {
          tool_calls: [
            { id: 'a1', name: 'approve', arguments: { what: 'x' } },
            { id: 'c1', name: 'pick_color', arguments: { palette: 'warm' } },
          ],
        },
        { text: 'ok' },
      ],
      { spec: { sections: { tool_execution: { mode: 'parallel_batch_approval' } } } },
    );
    const { stopReason, asked, updates } = await turn(host);
    expect({ stopReason, asked }).toEqual({ stopReason: 'end_turn', asked: ['a1'] });
    expect(updates).toContainEqual(failedUpdate);
    const results = s.llm.requests[1]?.messages.filter((m) => m.role === 'tool');
    expect(results?.map((m) => [m.tool_call_id, m.content])).toEqual([
      ['a1', [{ type: 'text', text: expect.stringContaining('"approved":"x"') }]],
      ['c1', [{ type: 'text', text: refusal }]],
    ]);
  });

  it('docs/protocols/acp.md gives the words the model reads', () => {
    const page = readFileSync(join(import.meta.dirname, '../../docs/protocols/acp.md'), 'utf8');
    expect(acpClientToolRefusal('pick_color')).toBe(refusal);
    expect(page).toContain(JSON.stringify({ error: acpClientToolRefusal('<name>') }));
  });
});
