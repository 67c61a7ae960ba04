import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { judgeAgUi } from '../../src/protocols/ag-ui/judge.ts';
import { judgeAiSdk } from '../../src/protocols/ai-sdk-v6/judge.ts';
import { startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * A run whose provider failed, from `awaken serve` over a real socket: its event stream says so with
 * an `error` event (and no `inference_complete` for the inference that failed) before the run closes
 * `done` with status_reason `error:<what failed>`; the AI SDK and AG-UI streams end with their
 * protocol's error terminal, as their official libraries read them.
 */

const MESSAGE = 'timeout: no answer in time';
let server: ServeProcess;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-failing-'));
  writeFileSync(join(dir, 'script.yaml'), '- error: { code: timeout, message: no answer in time }\n');
  writeFileSync(
    join(dir, 'awaken.yaml'),
    [
      'server:',
      '  store: memory',
      'providers:',
      `  down: { kind: scripted, file: ${join(dir, 'script.yaml')} }`,
      'models:',
      '  down: { provider: down, model_name: down }',
      'agents:',
      '  - id: failing',
      '    model: down',
    ].join('\n'),
  );
  server = await startServe(['--config', join(dir, 'awaken.yaml')]);
});
afterAll(async () => {
  await server.stop();
});

const post = (path: string, body: unknown): Promise<Response> =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const dataOf = (sse: string): Record<string, unknown>[] =>
  sse
    .split('\n\n')
    .flatMap((frame) => frame.split('\n').filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]'))
    .map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);

describe('a run whose provider failed, over awaken serve', () => {
  it('the run events: error in place of inference_complete, then the step and the run close done with the reason', async () => {
    const events = dataOf(await (await post('/v1/runs', { threadId: 'failing-1', agentId: 'failing', messages: [{ role: 'user', content: 'hi' }] })).text());
    expect(events.map((e) => e['event_type'])).toEqual(['run_start', 'step_start', 'error', 'state_snapshot', 'step_end', 'state_snapshot', 'run_finish']);
    expect(events[2]).toEqual({ event_type: 'error', message: MESSAGE, code: 'timeout' });
    expect(events.at(-1)).toMatchObject({
      result: { response: '', status: 'done', status_reason: `error:${MESSAGE}` },
      termination: { type: 'error', value: MESSAGE },
    });
  });

  it('AI SDK v6: the stream ends with the error chunk, as ai reads it', async () => {
    const body = await (
      await post('/v1/ai-sdk/chat', { id: 'failing-2', agentId: 'failing', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] })
    ).text();
    const v = await judgeAiSdk(body);
    expect(v.problems).toEqual([]);
    expect(v.streamError).toBe(MESSAGE);
    expect(v.chunks.at(-1)).toEqual({ type: 'error', errorText: MESSAGE });
  });

  it('AG-UI: the stream ends with RUN_ERROR, its message and code, as @ag-ui/client reads it', async () => {
    const input = {
      threadId: 'failing-3',
      runId: 'r-3',
      state: {},
      tools: [],
      context: [],
      forwardedProps: {},
      messages: [{ id: 'u1', role: 'user', content: 'hi' }],
    };
    const v = await judgeAgUi(await (await post('/v1/ag-ui/agents/failing/runs', input)).text());
    expect(v.problems).toEqual([]);
    expect(v.runError).toBe(MESSAGE);
    expect(v.events.at(-1)).toMatchObject({ type: 'RUN_ERROR', message: MESSAGE, code: 'timeout' });
  });
});
