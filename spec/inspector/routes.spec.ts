import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inspectorRoutes } from '../../src/inspector/routes.ts';
import { repo } from '../support/serve-process.ts';
import { testServer } from '../support/server.ts';

/**
 * The inspector's routes (docs/inspector.md → API), in process: the page's files public and under
 * a content security policy, its API behind the access control — a transcript listed and served only
 * to the owner its header names, on a thread still theirs (spec/inspector/tenancy.spec.ts attacks it
 * over a socket) — and a replay in the server of a sent or a recorded transcript.
 */

const RUN46 = join(repo, 'fixtures/runs/46-observability-spans.jsonl');
const tokens = new Map([
  ['token-ann', 'ann'],
  ['token-bob', 'bob'],
]);

function setup(options: { readonly auth?: boolean } = {}) {
  const record = mkdtempSync(join(tmpdir(), 'awaken-inspector-routes-'));
  const assets = mkdtempSync(join(tmpdir(), 'awaken-inspector-assets-'));
  mkdirSync(join(assets, 'assets'));
  writeFileSync(join(assets, 'index.html'), '<!doctype html><title>inspector</title>');
  writeFileSync(join(assets, 'assets/app.js'), 'export {};');
  const s = testServer([{ text: 'hi' }, { text: 'hi again' }], options.auth === true ? { http: { auth: { tokens } } } : {});
  s.app.route('/', inspectorRoutes({ store: s.store, recordDir: record, assetsDir: assets }));
  return { ...s, record };
}

/** Corpus run 46 as a server would have recorded it: on `thread`, as `run`, for `owner` (none: nobody's). */
function recordedAs(thread: string, run: string, owner?: string): string {
  const [first, ...rest] = readFileSync(RUN46, 'utf8').split('\n');
  const header = JSON.parse(first as string) as { request: Record<string, unknown> };
  header.request = { thread_id: thread, run_id: run, ...(owner !== undefined ? { owner } : {}), ...header.request };
  return [JSON.stringify(header), ...rest].join('\n');
}

const as = (token: string | undefined, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { ...(init.headers as Record<string, string>), ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) },
});
const post = (body: unknown, token?: string): RequestInit =>
  as(token, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('inspector routes', () => {
  it('serves the page’s files under a content security policy (public, like a login page); refuses a path out of them', async () => {
    const { app } = setup({ auth: true });
    const page = await app.request('/inspector/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect((await app.request('/inspector/assets/app.js')).headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await app.request('/inspector')).status).toBe(302);
    expect((await app.request('/inspector/..%2f..%2fpackage.json')).status).toBe(404);
    expect((await app.request('/inspector/nothing.js')).status).toBe(404);
  });

  it('its API needs a token when tokens are configured; each caller sees the transcripts its headers say are theirs, whatever the files are called', async () => {
    const { app, record } = setup({ auth: true });
    // Ann and Bob each run on a thread of theirs; transcripts of them are in the record directory.
    expect((await app.request('/v1/runs', post({ threadId: 'ann-1', messages: [{ role: 'user', content: 'hi' }] }, 'token-ann'))).status).toBe(200);
    expect((await app.request('/v1/runs', post({ threadId: 'bob-1', messages: [{ role: 'user', content: 'hi' }] }, 'token-bob'))).status).toBe(200);
    writeFileSync(join(record, 'anns.jsonl'), recordedAs('ann-1', 'run-a', 'ann'));
    writeFileSync(join(record, 'bob-1--run-b.jsonl'), recordedAs('bob-1', 'run-b', 'bob'));
    // Named like Ann's thread, recorded on Bob's; and one on Ann's thread that nobody owns.
    writeFileSync(join(record, 'ann-1--run-x.jsonl'), recordedAs('bob-1', 'run-x', 'bob'));
    writeFileSync(join(record, 'ann-1--run-y.jsonl'), recordedAs('ann-1', 'run-y'));
    expect((await app.request('/v1/inspector/transcripts')).status).toBe(401);
    const list = (await (await app.request('/v1/inspector/transcripts', as('token-ann'))).json()) as { recording: boolean; items: { name: string }[] };
    expect(list).toMatchObject({ recording: true, items: [{ name: 'anns.jsonl', thread_id: 'ann-1', run_id: 'run-a' }] });
    expect(list.items).toHaveLength(1);
    expect((await app.request('/v1/inspector/transcripts/anns.jsonl', as('token-ann'))).status).toBe(200);
    for (const name of ['bob-1--run-b.jsonl', 'ann-1--run-x.jsonl', 'ann-1--run-y.jsonl']) {
      expect((await app.request(`/v1/inspector/transcripts/${name}`, as('token-ann'))).status, name).toBe(404);
      expect((await app.request('/v1/inspector/replay', post({ name }, 'token-ann'))).status, name).toBe(404);
    }
    // A file rewritten as someone else's is listed as that: each file's lines are read again once it changes.
    writeFileSync(join(record, 'anns.jsonl'), recordedAs('bob-1', 'run-a', 'bob'));
    expect(((await (await app.request('/v1/inspector/transcripts', as('token-ann'))).json()) as { items: unknown[] }).items).toEqual([]);
    expect((await app.request('/v1/inspector/transcripts/anns.jsonl', as('token-ann'))).status).toBe(404);
  });

  it('replays a sent transcript or a recorded one: identical, or where it left the recording with the recorded line', async () => {
    const { app, record } = setup();
    copyFileSync(RUN46, join(record, 'thread-1--run-1.jsonl'));
    const same = (await (await app.request('/v1/inspector/replay', post({ name: 'thread-1--run-1.jsonl' }))).json()) as {
      report: { identical: boolean; expectedEvents: number };
    };
    expect(same.report).toMatchObject({ identical: true, expectedEvents: 27 });
    const text = readFileSync(RUN46, 'utf8').replace('"delta":"Checking two things."', '"delta":"Checking 2 things."');
    const r = (await (await app.request('/v1/inspector/replay', post({ transcript: text }))).json()) as {
      report: { identical: boolean; at: { line: number; record: string }; firstDifference: { expected: string } };
      recorded_line: string;
    };
    expect(r.report.identical).toBe(false);
    expect(r.report.at.record).toBe('event');
    expect(r.recorded_line).toContain('"delta":"Checking 2 things."');
    expect(r.recorded_line).toBe(text.split('\n')[r.report.at.line - 1]);
  });

  it('bad input is a 400 naming the field, never a crash', async () => {
    const { app } = setup();
    const both = await app.request('/v1/inspector/replay', post({ transcript: 'x', name: 'a--b.jsonl' }));
    expect(both.status).toBe(400);
    expect(await both.json()).toMatchObject({ field: 'transcript' });
    const badName = await app.request('/v1/inspector/replay', post({ name: '../etc/passwd' }));
    expect(badName.status).toBe(400);
    expect(await badName.json()).toMatchObject({ field: 'name' });
    const garbage = (await (await app.request('/v1/inspector/replay', post({ transcript: 'not a transcript' }))).json()) as {
      report: { identical: boolean; divergence: { port: string } };
    };
    expect(garbage.report).toMatchObject({ identical: false, divergence: { port: 'transcript' } });
    expect((await app.request('/v1/inspector/transcripts/nothing--here.jsonl')).status).toBe(404);
  });

  it('forks a recorded transcript at a step: the child, and the two runs side by side from the step where they part', async () => {
    const { app, record } = setup();
    copyFileSync(join(repo, 'fixtures/runs/03-one-tool.jsonl'), join(record, 'one-tool.jsonl'));
    const same = await app.request('/v1/inspector/fork', post({ name: 'one-tool.jsonl', at_step: 1 }));
    expect(same.status).toBe(200);
    const asIs = (await same.json()) as { transcript: string; inferences: unknown; view: unknown };
    expect(asIs.inferences).toEqual({ recorded: 1, model: 0 });
    expect(asIs.view).toEqual({
      at_step: 1,
      same_end: true,
      rows: [{ step: 2, parent: { text: 'The echo said ping.', calls: [] }, fork: { text: 'The echo said ping.', calls: [] }, same: true }],
      parent: { steps: 2, termination: { type: 'natural_end' }, response: 'The echo said ping.' },
      fork: { steps: 2, termination: { type: 'natural_end' }, response: 'The echo said ping.' },
    });
    expect(JSON.parse(asIs.transcript.slice(0, asIs.transcript.indexOf('\n'))).fork).toMatchObject({ parent: 'one-tool.jsonl', at_step: 1 });

    const edited = await app.request(
      '/v1/inspector/fork',
      post({ name: 'one-tool.jsonl', at_step: 1, edits: [{ path: '/agent/system_prompt', value: 'Be brief.' }], model: [{ text: 'Brief.' }] }),
    );
    expect(edited.status).toBe(200);
    expect(((await edited.json()) as { view: unknown }).view).toEqual({
      at_step: 1,
      parted_at: 2,
      same_end: false,
      rows: [{ step: 2, parent: { text: 'The echo said ping.', calls: [] }, fork: { text: 'Brief.', calls: [] }, same: false }],
      parent: { steps: 2, termination: { type: 'natural_end' }, response: 'The echo said ping.' },
      fork: { steps: 2, termination: { type: 'natural_end' }, response: 'Brief.' },
    });
  });

  it('a fork that cannot be made is a 4xx naming the field, never a crash', async () => {
    const { app, record } = setup();
    copyFileSync(join(repo, 'fixtures/runs/03-one-tool.jsonl'), join(record, 'one-tool.jsonl'));
    copyFileSync(join(repo, 'fixtures/runs/11-suspension-resumed-replay-tool-call.jsonl'), join(record, 'waiting.jsonl'));
    const fork = async (body: unknown) => {
      const r = await app.request('/v1/inspector/fork', post(body));
      return { status: r.status, body: await r.json() };
    };
    expect(await fork({ name: 'one-tool.jsonl', at_step: 3 })).toEqual({
      status: 400,
      body: { error: "step 3 is past the run's end: it has 2 step(s)", code: 'step_past_end', field: 'at_step' },
    });
    expect(await fork({ name: 'one-tool.jsonl', at_step: 1, edits: [{ path: '/agent/nope', value: 1 }] })).toMatchObject({
      status: 400,
      body: { code: 'no_such_field', field: 'edits' },
    });
    expect(await fork({ name: 'one-tool.jsonl', at_step: 1, edits: [{ path: '/agent/system_prompt', value: 'Be brief.' }] })).toEqual({
      status: 400,
      body: {
        error: 'step 2: the request differs from the recorded one at messages[0].content[0].text: a model must answer from here (--model)',
        code: 'model_required',
        field: 'model',
      },
    });
    expect(await fork({ name: 'waiting.jsonl', at_step: 1 })).toMatchObject({ status: 422, body: { code: 'cannot_run', field: 'name' } });
    expect(await fork({ name: 'one-tool.jsonl', at_step: 0 })).toMatchObject({ status: 400, body: { field: 'at_step' } });
    expect(await fork({ name: 'one-tool.jsonl', at_step: 1, model: [{ bogus: 1 }] })).toMatchObject({ status: 400, body: { field: 'model.0.bogus' } });
    expect(await fork({ name: 'one-tool.jsonl', at_step: 1, model: [{ text: 'slow', delay_ms: 60_000 }] })).toMatchObject({
      status: 400,
      body: { error: 'model.0.delay_ms: a fork’s scripted model answers at once: no delay_ms', field: 'model.0.delay_ms' },
    });
    expect(await fork({ name: 'one-tool.jsonl', at_step: 1, extra: true })).toMatchObject({ status: 400 });
    expect(await fork({ name: 'nothing--here.jsonl', at_step: 1 })).toMatchObject({ status: 404, body: { code: 'transcript_not_found' } });
  });
});
