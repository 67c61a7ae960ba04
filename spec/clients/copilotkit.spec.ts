import { createServer, type Server } from 'node:http';
import { buildResumeArray, HttpAgent } from '@ag-ui/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { judgeAgUi } from '../../src/protocols/ag-ui/judge.ts';
import { callsOf, lastAssistantText } from '../support/ag-ui-client.ts';
import { failOnConsole } from '../support/console.ts';
import { startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * CopilotKit's runtime (`@copilotkit/runtime` v2, its Node listener) with an AG-UI `HttpAgent`
 * pointed at `awaken serve`'s `/v1/ag-ui/run`: the path a CopilotKit front end takes. A client
 * talks to the CopilotKit runtime as the CopilotKit front end does (AG-UI over
 * `<runtime>/agent/<id>/run`), through the same three turns; then the runtime's stored thread,
 * replayed by its `connect` endpoint, is judged by the AG-UI client.
 */

// CopilotKit reports usage unless told not to; this machine has no network, and a test has no say.
process.env['COPILOTKIT_TELEMETRY_DISABLED'] = '1';

let server: ServeProcess;
let copilot: Server;
let runtimeUrl: string;

beforeAll(async () => {
  server = await startServe(['--store', 'memory', '--model', 'scripted:fixtures/scripts/demo-conversation.yaml']);
  const { CopilotRuntime } = await import('@copilotkit/runtime/v2');
  const { createCopilotNodeListener } = await import('@copilotkit/runtime/v2/node');
  const runtime = new CopilotRuntime({ agents: { default: new HttpAgent({ url: `${server.url}/v1/ag-ui/run` }) as never } });
  copilot = createServer(createCopilotNodeListener({ runtime, basePath: '/api/copilotkit', cors: true, activateChannels: false }) as never);
  await new Promise<void>((r) => copilot.listen(0, '127.0.0.1', () => r()));
  runtimeUrl = `http://127.0.0.1:${(copilot.address() as { port: number }).port}/api/copilotkit`;
});
afterAll(async () => {
  if (copilot !== undefined) await new Promise<void>((r) => copilot.close(() => r()));
  await server?.stop();
});

describe('CopilotKit runtime v2 → HttpAgent → awaken serve', () => {
  failOnConsole(['warn']);

  it('lists the agent, and runs the three turns through the runtime without renaming a call', async () => {
    const info = (await (await fetch(`${runtimeUrl}/info`)).json()) as { agents: Record<string, unknown>; version: string };
    expect(Object.keys(info.agents)).toEqual(['default']);
    expect(info.version).toBe('1.75.0');

    const client = new HttpAgent({ url: `${runtimeUrl}/agent/default/run`, threadId: 'ck-conversation' });
    client.messages.push({ id: 'u1', role: 'user', content: 'weather in Oslo?' });
    await client.runAgent({ runId: 'ck-1' });
    expect(lastAssistantText(client.messages)).toBe('It is sunny in Oslo, 10 °C.');

    client.messages.push({ id: 'u2', role: 'user', content: 'delete the branch' });
    await client.runAgent({ runId: 'ck-2' });
    expect(client.pendingInterrupts.map((i) => i.toolCallId)).toEqual(['call_delete_branch']);
    await client.runAgent({
      runId: 'ck-3',
      resume: buildResumeArray(client.pendingInterrupts, { [client.pendingInterrupts[0]?.id ?? '']: { status: 'resolved', payload: { approved: true } } }),
    });
    expect(lastAssistantText(client.messages)).toBe('Done: the branch is deleted.');

    client.messages.push({ id: 'u3', role: 'user', content: 'delete the tag' });
    await client.runAgent({ runId: 'ck-4' });
    await client.runAgent({
      runId: 'ck-5',
      resume: buildResumeArray(client.pendingInterrupts, { [client.pendingInterrupts[0]?.id ?? '']: { status: 'cancelled' } }),
    });
    expect(lastAssistantText(client.messages)).toBe('Understood, I left the tag alone.');
    expect(callsOf(client.messages)).toEqual([
      ['call_weather', 'get_weather'],
      ['call_delete_branch', 'confirm_action'],
      ['call_delete_tag', 'confirm_action'],
    ]);

    // The runtime's stored thread, as a reconnecting front end gets it: the AG-UI client judges it.
    const connect = await fetch(`${runtimeUrl}/agent/default/connect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ threadId: 'ck-conversation', runId: 'ck-connect', messages: [], state: {}, tools: [], context: [], forwardedProps: {} }),
    });
    expect(connect.status).toBe(200);
    const body = (await connect.text())
      .split('\n\n')
      .filter((f) => f.startsWith('data: '))
      .join('\n\n');
    const verdict = await judgeAgUi(`${body}\n\n`);
    expect(verdict.problems).toEqual([]);
    expect(callsOf(verdict.messages)).toEqual([
      ['call_weather', 'get_weather'],
      ['call_delete_branch', 'confirm_action'],
      ['call_delete_tag', 'confirm_action'],
    ]);
  });
});
