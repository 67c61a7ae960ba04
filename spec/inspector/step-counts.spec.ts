import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { timelineOf, transcriptRecords } from '../../src/replay/timeline.ts';
import { readFrames } from '../support/server.ts';
import { startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * One step count for a run, whichever surface shows it (book: `AgentRunResult.steps`, "tool step +
 * text step": a step is one inference and its tool batch; the batch of a suspended call, resumed,
 * belongs to the step whose inference asked for it). Over a real `awaken serve`: a run that calls a
 * tool, then waits on an approval, then answers has taken 2 steps while it waits and 3 once it ends
 * — in `GET /v1/runs/:id`, the run list the inspector shows, the transcript's `end` record, the
 * timeline and the transcript's `step_start` events — also across a server restart while it waits;
 * and a delegation's result counts the sub-run's steps the same way.
 */

interface RunRecord {
  readonly run_id: string;
  readonly thread_id: string;
  readonly status: string;
  readonly steps: number;
}

function config(files: Record<string, unknown>, yaml: readonly string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-steps-'));
  for (const [name, script] of Object.entries(files)) writeFileSync(join(dir, name), JSON.stringify(script));
  writeFileSync(join(dir, 'awaken.yaml'), [...yaml, ''].join('\n'));
  return join(dir, 'awaken.yaml');
}

/** Tool step, then a step whose call waits for approval, then the answer. */
const THREE_STEPS = [
  { tool_calls: [{ id: 'w', name: 'get_weather', arguments: { city: 'Oslo' } }] },
  { tool_calls: [{ id: 'c', name: 'confirm_action', arguments: { action: 'ship' } }] },
  { text: 'Shipped.' },
];

const post = (url: string, path: string, body: unknown): Promise<Response> =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const record = async (url: string, runId: string): Promise<RunRecord> => (await (await fetch(`${url}/v1/runs/${runId}`)).json()) as RunRecord;
const listed = async (url: string, threadId: string): Promise<RunRecord[]> =>
  ((await (await fetch(`${url}/v1/runs?thread_id=${encodeURIComponent(threadId)}`)).json()) as { items: RunRecord[] }).items;
const done = (url: string, runId: string): Promise<unknown> => expect.poll(async () => (await record(url, runId)).status, { timeout: 10_000 }).toBe('done');

/** A run started and read to its suspension; its id. */
async function suspend(url: string, threadId: string, agentId: string): Promise<string> {
  const r = await post(url, '/v1/runs', { threadId, agentId, messages: [{ role: 'user', content: 'go' }] });
  expect(await r.text()).toContain('"type":"suspended"');
  return r.headers.get('x-awaken-run-id') as string;
}

/** The transcript of a run, as the inspector's API serves it. */
async function transcript(url: string, threadId: string, runId: string): Promise<string> {
  let name: string | undefined;
  await expect
    .poll(
      async () => {
        const items = (
          (await (await fetch(`${url}/v1/inspector/transcripts?thread_id=${encodeURIComponent(threadId)}`)).json()) as {
            items: { name: string; run_id: string }[];
          }
        ).items;
        name = items.find((t) => t.run_id === runId)?.name;
        return name;
      },
      { timeout: 10_000 },
    )
    .toBeDefined();
  return (await fetch(`${url}/v1/inspector/transcripts/${encodeURIComponent(name as string)}`)).text();
}

describe('a run that suspends and resumes: one step count on every surface', () => {
  it('2 steps while it waits, 3 once it ends: the run record, the run list, the transcript’s end record, its step_start events and the timeline', async () => {
    const store = join(mkdtempSync(join(tmpdir(), 'awaken-steps-db-')), 'awaken.sqlite');
    const file = config({ 'three.json': THREE_STEPS }, [
      'providers:',
      '  s: { kind: scripted, file: three.json }',
      'models:',
      '  m: { provider: s, model_name: m }',
      'agents:',
      '  - { id: asker, model: m, system_prompt: "Ask first." }',
    ]);
    const dir = mkdtempSync(join(tmpdir(), 'awaken-steps-record-'));
    let server: ServeProcess = await startServe(['--config', file, '--store', `sqlite:${store}`, '--record', dir]);
    try {
      const runId = await suspend(server.url, 'steps', 'asker');
      expect((await record(server.url, runId)).steps).toBe(2);
      expect((await listed(server.url, 'steps')).map((r) => [r.run_id, r.steps])).toEqual([[runId, 2]]);
      expect((await post(server.url, `/v1/runs/${runId}/decision`, { toolCallId: 'c', action: 'resume', payload: { approved: true } })).status).toBe(202);
      await done(server.url, runId);
      expect((await record(server.url, runId)).steps).toBe(3);
      expect((await listed(server.url, 'steps')).map((r) => [r.run_id, r.steps])).toEqual([[runId, 3]]);
      const text = await transcript(server.url, 'steps', runId);
      const end = JSON.parse(text.trimEnd().split('\n').at(-1) as string) as { type: string; result: { steps: number } };
      expect(end).toMatchObject({ type: 'end', result: { steps: 3 } });
      expect(text.split('\n').filter((l) => l.includes('"event_type":"step_start"'))).toHaveLength(3);
      expect(timelineOf(transcriptRecords(text)).step_count).toBe(3);

      // Across a restart while it waits: the revived run goes on counting from the steps it had taken.
      const parked = await suspend(server.url, 'steps-restart', 'asker');
      expect((await record(server.url, parked)).steps).toBe(2);
      await server.stop();
      server = await startServe(['--config', file, '--store', `sqlite:${store}`]);
      expect((await record(server.url, parked)).steps).toBe(2);
      expect((await post(server.url, `/v1/runs/${parked}/decision`, { toolCallId: 'c', action: 'resume', payload: { approved: true } })).status).toBe(202);
      await done(server.url, parked);
      expect((await record(server.url, parked)).steps).toBe(3);
    } finally {
      await server.stop();
    }
  }, 60_000);

  it('a delegation’s result and its final activity count the sub-run’s steps across its suspension, as the sub-run’s own record does', async () => {
    const file = config(
      {
        'parent.json': [{ tool_calls: [{ id: 'd1', name: 'agent_run_child', arguments: { prompt: 'do it' } }] }, { text: 'Parent done.' }],
        'child.json': THREE_STEPS,
      },
      [
        'providers:',
        '  p: { kind: scripted, file: parent.json }',
        '  c: { kind: scripted, file: child.json }',
        'models:',
        '  pm: { provider: p, model_name: pm }',
        '  cm: { provider: c, model_name: cm }',
        'agents:',
        '  - { id: parent, model: pm, system_prompt: "Delegate.", delegates: [child] }',
        '  - { id: child, model: cm, system_prompt: "Do it." }',
      ],
    );
    const server = await startServe(['--config', file, '--store', 'memory']);
    try {
      const runId = await suspend(server.url, 'parent-thread', 'parent');
      expect((await record(server.url, runId)).steps).toBe(1);
      expect((await post(server.url, `/v1/runs/${runId}/decision`, { toolCallId: 'd1', action: 'resume', payload: { approved: true } })).status).toBe(202);
      const frames = await readFrames(
        await fetch(`${server.url}/v1/threads/parent-thread/stream?since=0`),
        (f) => f.some((x) => x.data.includes('"natural_end"')),
        10_000,
      );
      const events = frames.map((f) => JSON.parse(f.data) as { event_type: string; activity_type?: string; content?: unknown });
      const views = events.filter((e) => e.activity_type === 'agent-delegation').map((e) => e.content as { status: string; steps: number; run_id: string });
      const final = views.at(-1) as { status: string; steps: number; run_id: string };
      expect(final).toMatchObject({ status: 'completed', steps: 3 });
      // The call's result, as the model reads it.
      const resumed = events.find((e) => e.event_type === 'tool_call_resumed') as { result: unknown } | undefined;
      expect(resumed?.result).toMatchObject({ agent_id: 'child', status: 'completed', response: 'Shipped.', steps: 3 });
      expect((await record(server.url, final.run_id)).steps).toBe(3);
      await done(server.url, runId);
      expect((await record(server.url, runId)).steps).toBe(2);
    } finally {
      await server.stop();
    }
  }, 60_000);
});
