import { buildResumeArray, HttpAgent, type Message } from '@ag-ui/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callsOf, lastAssistantText } from '../support/ag-ui-client.ts';
import { failOnConsole } from '../support/console.ts';
import { startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * The AG-UI client (`@ag-ui/client` 1.0 `HttpAgent`: enforce, verify, apply) against a real
 * `awaken serve` process over a real socket: three turns with an interrupt approved and one
 * declined. The client repairs a stream it does not like with only a warning; any warning fails.
 */

let server: ServeProcess;
beforeAll(async () => {
  server = await startServe(['--store', 'memory', '--model', 'scripted:fixtures/scripts/demo-conversation.yaml']);
});
afterAll(async () => {
  await server.stop();
});

describe('@ag-ui/client HttpAgent against awaken serve', () => {
  // Not one warning, resume included: every [ag-ui] warning is a repair of the stream.
  failOnConsole(['warn']);

  it('three turns: a tool call, an interrupt resumed, an interrupt declined — names, ids and parents kept', async () => {
    const agent = new HttpAgent({ url: `${server.url}/v1/ag-ui/run`, threadId: 'agui-conversation' });
    const runIds: string[] = [];
    agent.subscribe({ onRunStartedEvent: ({ event }) => void runIds.push(event.runId), onRunFinishedEvent: ({ event }) => void runIds.push(event.runId) });

    agent.messages.push({ id: 'u1', role: 'user', content: 'weather in Oslo?' });
    await agent.runAgent({ runId: 'client-1' });
    expect(agent.messages.find((m) => m.role === 'tool')).toMatchObject({
      toolCallId: 'call_weather',
      content: JSON.stringify({ city: 'Oslo', condition: 'sunny', temperature_c: 10 }),
    });
    expect(lastAssistantText(agent.messages)).toBe('It is sunny in Oslo, 10 °C.');
    expect(agent.messages.some((m) => m.role === 'reasoning')).toBe(true);
    // The client is shown the state keys its agent shares (`client_state`): the demo agent shares none,
    // so the runtime's own keys never reach the page (nor come back with its next request).
    expect(agent.state).toEqual({});

    agent.messages.push({ id: 'u2', role: 'user', content: 'delete the branch' });
    await agent.runAgent({ runId: 'client-2' });
    expect(agent.pendingInterrupts).toMatchObject([{ toolCallId: 'call_delete_branch', reason: 'confirm', message: 'Confirm: delete the branch?' }]);
    // One call, under its name, in the message that made it.
    const holder = (id: string): string | undefined => agent.messages.find((m) => 'toolCalls' in m && (m.toolCalls ?? []).some((c) => c.id === id))?.id;
    const before = holder('call_delete_branch');
    await agent.runAgent({
      runId: 'client-3',
      resume: buildResumeArray(agent.pendingInterrupts, { [agent.pendingInterrupts[0]?.id ?? '']: { status: 'resolved', payload: { approved: true } } }),
    });
    expect(agent.pendingInterrupts).toEqual([]);
    expect(callsOf(agent.messages).filter(([id]) => id === 'call_delete_branch')).toEqual([['call_delete_branch', 'confirm_action']]);
    expect(holder('call_delete_branch')).toBe(before);
    expect(agent.messages.find((m) => m.role === 'tool' && m.toolCallId === 'call_delete_branch')?.content).toContain('"confirmed":"delete the branch"');
    expect(lastAssistantText(agent.messages)).toBe('Done: the branch is deleted.');

    agent.messages.push({ id: 'u3', role: 'user', content: 'delete the tag' });
    await agent.runAgent({ runId: 'client-4' });
    const interrupt = agent.pendingInterrupts[0];
    expect(interrupt?.toolCallId).toBe('call_delete_tag');
    await agent.runAgent({ runId: 'client-5', resume: buildResumeArray(agent.pendingInterrupts, { [interrupt?.id ?? '']: { status: 'cancelled' } }) });
    expect(agent.pendingInterrupts).toEqual([]);
    expect(callsOf(agent.messages)).toEqual([
      ['call_weather', 'get_weather'],
      ['call_delete_branch', 'confirm_action'],
      ['call_delete_tag', 'confirm_action'],
    ]);
    expect(lastAssistantText(agent.messages)).toBe('Understood, I left the tag alone.');
    // Every run started and finished under the id the client chose.
    expect(runIds).toEqual(['client-1', 'client-1', 'client-2', 'client-2', 'client-3', 'client-3', 'client-4', 'client-4', 'client-5', 'client-5']);
    const history = (await (await fetch(`${server.url}/v1/ag-ui/threads/agui-conversation/messages`)).json()) as Message[];
    expect(history.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['weather in Oslo?', 'delete the branch', 'delete the tag']);
    // Each run ended with the thread as stored (MESSAGES_SNAPSHOT): the client holds the server's
    // history, ids included, and the reasoning its streams showed (which the history does not keep).
    expect(agent.messages.filter((m) => m.role !== 'reasoning')).toEqual(history);
  });
});
