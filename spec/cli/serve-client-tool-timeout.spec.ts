import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * `mailbox.client_tool_timeout_ms` in a served config: how long a run waits on a call the client
 * runs before the call ends with an error the model reads (24 h by default). Set to 300 ms, a client
 * that never answers sees its run go on, and the model read the error naming that bound.
 */

let server: ServeProcess;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-client-timeout-'));
  writeFileSync(
    join(dir, 'script.yaml'),
    ['- tool_calls: [{ id: call_color, name: pick_color, arguments: {} }]', '- text: "No color came back; I picked blue."'].join('\n'),
  );
  writeFileSync(
    join(dir, 'awaken.yaml'),
    ['server:', '  store: memory', '  model: "scripted:script.yaml"', 'mailbox:', '  client_tool_timeout_ms: 300', '  sweep_interval_ms: 50'].join('\n'),
  );
  server = await startServe(['--config', join(dir, 'awaken.yaml')]);
});
afterAll(async () => {
  await server?.stop();
});

describe('mailbox.client_tool_timeout_ms', () => {
  it('ends a call the client never answers after the configured time, with an error naming it; the run goes on', async () => {
    const input = {
      threadId: 'never-answers',
      runId: 'r1',
      messages: [{ id: 'u1', role: 'user', content: 'pick a color' }],
      tools: [{ name: 'pick_color', description: 'asks the page for a color', parameters: { type: 'object', properties: {} } }],
      context: [],
      state: {},
      forwardedProps: {},
    };
    const r = await fetch(`${server.url}/v1/ag-ui/run`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(input) });
    expect(r.status).toBe(200);
    expect(await r.text()).toContain('"type":"RUN_FINISHED"');
    const messages = async (): Promise<{ role: string; content: { text?: string }[]; tool_call_id?: string }[]> =>
      ((await (await fetch(`${server.url}/v1/threads/never-answers/messages?limit=50`)).json()) as { messages: never[] }).messages;
    await expect.poll(async () => (await messages()).at(-1)?.content[0]?.text, { timeout: 10_000 }).toBe('No color came back; I picked blue.');
    const result = (await messages()).find((m) => m.role === 'tool' && m.tool_call_id === 'call_color');
    expect(result?.content[0]?.text).toBe("the client did not send this call's result within 300 ms");
  });
});
