import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repo, startDemoAndSlow, type ServeProcess } from '../support/serve-process.ts';
import { launchChromium, seriousViolations } from '../support/browser.ts';
import { parked, served as reloadable } from '../support/segments.ts';
import { decisionFor } from '../../src/runtime/run-loop.ts';

/**
 * The run inspector in a real browser (docs/inspector.md): `awaken serve --record DIR` with a few
 * corpus runs in DIR and runs it serves itself, the page as the package builds it, headless Chromium
 * (from @sparticuz/chromium, web security on). It walks thread → run → a tool call → a state diff,
 * follows a live run to its end through a dropped connection, replays a tampered transcript and
 * names where it diverged, asks for a token when the server has API tokens (and never puts it in a
 * URL), and passes axe-core with no serious or critical violation. Screenshots of each view go to
 * test-artifacts/browser/inspector-*.png.
 */

const ARTIFACTS = join(repo, 'test-artifacts/browser');
const RUN46 = join(repo, 'fixtures/runs/46-observability-spans.jsonl');
let assets = '';
let server: ServeProcess;
let guarded: ServeProcess;
let browser: Browser;

/** A corpus run as a server records one: its header names the thread (and run) it was served on (its replay then differs: the run no longer draws them). */
function servedAs(file: string, threadId: string): string {
  const [first, ...rest] = readFileSync(file, 'utf8').split('\n');
  const header = JSON.parse(first as string) as { request: Record<string, unknown> };
  header.request = { thread_id: threadId, run_id: 'run-1', ...header.request };
  return [JSON.stringify(header), ...rest].join('\n');
}

/** A TCP proxy in front of a server: the page talks to it, and the test can cut every connection it carries. */
async function proxyOf(target: string): Promise<{ readonly url: string; cut(): void; close(): void }> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  const proxy: Server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const gone = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', gone).on('error', gone);
    upstream.on('close', gone).on('error', gone);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(proxy.address() as { port: number }).port}`,
    cut: () => {
      for (const s of sockets) s.destroy();
    },
    close: () => {
      for (const s of sockets) s.destroy();
      proxy.close();
    },
  };
}

async function newPage(): Promise<{ page: Page; problems: string[]; urls: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const problems: string[] = [];
  const urls: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('request', (r) => urls.push(r.url()));
  return { page, problems, urls };
}

beforeAll(async () => {
  assets = mkdtempSync(join(tmpdir(), 'awaken-inspector-page-'));
  await build({ configFile: join(repo, 'inspector/vite.config.ts'), mode: 'production', build: { outDir: assets, emptyOutDir: true }, logLevel: 'error' });
  const record = mkdtempSync(join(tmpdir(), 'awaken-inspector-runs-'));
  // A few corpus runs in the record directory: two as a server records them, on a thread of their own
  // that the header names; one as recorded (its thread drawn by the run: `thread-1`), replayed by name below.
  writeFileSync(join(record, 'corpus~2dtools--run~2d1.jsonl'), servedAs(RUN46, 'corpus-tools'));
  writeFileSync(join(record, 'corpus~2dhandoff--run~2d1.jsonl'), servedAs(join(repo, 'fixtures/runs/40-handoff-overlay.jsonl'), 'corpus-handoff'));
  copyFileSync(join(repo, 'fixtures/runs/11-suspension-resumed-replay-tool-call.jsonl'), join(record, 'corpus-approval.jsonl'));
  copyFileSync(join(repo, 'fixtures/runs/03-one-tool.jsonl'), join(record, 'corpus-one-tool.jsonl'));
  // A run that parked on version 1 of an app, was let go at a reload and resumed on version 2: a transcript per segment.
  const reloaded = reloadable();
  await parked(reloaded.registry, 'reloaded');
  await reloaded.reload();
  await reloaded.registry.decideAnywhere('reloaded', [decisionFor('c1', 'resume', 5, { decisionId: 'd1' })]);
  for (let i = 0; i < 200 && readdirSync(reloaded.dir).length < 2; i++) await new Promise((r) => setTimeout(r, 25));
  for (const f of readdirSync(reloaded.dir)) copyFileSync(join(reloaded.dir, f), join(record, f));
  server = await startDemoAndSlow(['--record', record], { AWAKEN_INSPECTOR_ASSETS: assets });
  guarded = await startDemoAndSlow([], { AWAKEN_INSPECTOR_ASSETS: assets, AWAKEN_API_TOKEN: 'inspector-secret-token' });
  // A run the server serves (and records) itself.
  const served = await fetch(`${server.url}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ threadId: 'served-1', messages: [{ role: 'user', content: 'weather in Oslo?' }] }),
  });
  await served.text();
  browser = await launchChromium();
  mkdirSync(ARTIFACTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await guarded?.stop();
});

describe('the run inspector in a real browser', () => {
  it('thread → run → a tool call → a state diff; accessible (axe: no serious or critical violation)', async () => {
    const { page, problems } = await newPage();
    await page.goto(`${server.url}/inspector/`);
    await page.getByRole('button', { name: 'corpus-tools (1 recorded)' }).click();
    await page.getByRole('button', { name: /^run-1 · .*recorded$/ }).click();
    const run = page.locator('#run');
    await expect.poll(() => run.locator('[data-termination]').getAttribute('data-termination')).toBe('natural_end');
    expect(await run.locator('dl.summary').first().innerText()).toContain('85 in · 20 out · 105 total');
    // The first step is open: its inference, and its tool calls.
    const step1 = run.locator('details.step[data-step="1"]');
    expect(await step1.locator('> summary .step-title').innerText()).toMatch(
      /^Step 1 · \+5 ms · inference scripted-main 5 ms · 2 tool calls · \d+ state changes$/,
    );
    expect(await step1.locator('pre.answer').innerText()).toBe('Checking two things.');
    // A tool call, by keyboard: focus its summary, Enter opens it.
    const tool = step1.locator('details.tool[data-call-id="c1"]');
    await tool.locator('> summary').focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => tool.getAttribute('open')).not.toBeNull();
    expect(await tool.locator('> summary').innerText()).toBe('report [c1] · succeeded · 30 ms');
    expect(await tool.innerText()).toContain('"steps": 2');
    expect(await tool.locator('progress').count()).toBe(2);
    expect(await tool.getByText('chunk 1').count()).toBe(1);
    // The state after the step, as a JSON Patch against the one before.
    const state = step1.locator('details.state');
    await state.locator('> summary').click();
    await run.getByRole('button', { name: 'Show runtime keys' }).click();
    expect(await state.locator('> summary').innerText()).toMatch(/^State after step 1: \d+ changes \(revision 9\)$/);
    expect(await state.locator('tr[data-op="add"] td:nth-child(2)').allInnerTexts()).toContain('/extensions/__runtime.tool_call_states');
    // The request the model got, rebuilt whole.
    const request = step1.locator('details.request').first();
    await request.locator('> summary').click();
    expect(await request.locator('> summary').innerText()).toBe('Request: 2 messages, 5 tools');
    expect(await request.getByRole('list', { name: 'Messages' }).innerText()).toContain('scenario: observability-spans');
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-run.png'), fullPage: true });
    expect(await seriousViolations(page)).toEqual([]);
    // A run the server served and recorded itself.
    await page.getByRole('button', { name: /^served-1/ }).click();
    // Its run (an id the server drew, not corpus-tools' run-1, whose button may still be listed while the thread's runs load).
    await page.getByRole('button', { name: /^(?!run-1 )\S+ · .*recorded$/ }).click();
    await expect.poll(() => run.locator('details.tool').first().locator('> summary').innerText()).toMatch(/^get_weather \[call_\w+\] · succeeded/);
    expect(await run.locator('[data-termination]').getAttribute('data-termination')).toBe('natural_end');
    expect(await run.locator('dl.summary').first().innerText()).toContain('Thread\nserved-1');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('a run taken up again after a reload: its segments in order, each naming the app version that ran it; accessible', async () => {
    const { page, problems } = await newPage();
    await page.goto(`${server.url}/inspector/`);
    await page.getByRole('button', { name: 'reloaded (2 recorded)' }).click();
    await page.getByRole('button', { name: /recorded in 2 segments$/ }).click();
    const segments = page.locator('#run section.segment');
    await expect.poll(() => segments.count()).toBe(2);
    expect(await segments.locator('> h3').allInnerTexts()).toEqual(['Segment 1 · app.ts (1)', 'Segment 2 · app.ts (2) · taken up again from the store']);
    expect(await segments.locator('[data-termination]').evaluateAll((els) => els.map((e) => e.getAttribute('data-termination')))).toEqual([
      'suspended',
      'natural_end',
    ]);
    expect(await segments.nth(1).locator('dl.summary').first().innerText()).toContain('Answer\ndeployed');
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-segments.png'), fullPage: true });
    expect(await seriousViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('a thread id with `:` (user:42): its run is listed as recorded under user:42 and shows its timeline', async () => {
    const served = await fetch(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ threadId: 'user:42', messages: [{ role: 'user', content: 'weather in Oslo?' }] }),
    });
    await served.text();
    const runId = served.headers.get('x-awaken-run-id') as string;
    const { page, problems } = await newPage();
    await expect
      .poll(async () => {
        await page.goto(`${server.url}/inspector/`);
        return page.getByRole('button', { name: 'user:42 (1 recorded)' }).count();
      })
      .toBe(1);
    await page.getByRole('button', { name: 'user:42 (1 recorded)' }).click();
    await page.getByRole('button', { name: new RegExp(`^${runId} · .*recorded$`) }).click();
    const run = page.locator('#run');
    await expect.poll(() => run.locator('[data-termination]').getAttribute('data-termination')).toBe('natural_end');
    expect(await run.locator('dl.summary').first().innerText()).toContain('Thread\nuser:42');
    expect(await run.innerText()).not.toContain('no transcript');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('follows a live run to its end through a dropped connection (reconnecting with Last-Event-ID)', async () => {
    await fetch(`${server.url}/v1/threads`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'live-1' }) });
    const proxy = await proxyOf(server.url);
    const { page, problems } = await newPage();
    const resumedFrom: string[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/v1/threads/live-1/stream') && r.headers()['last-event-id'] !== undefined) resumedFrom.push(r.headers()['last-event-id'] as string);
    });
    await page.goto(`${proxy.url}/inspector/`);
    await page.getByRole('button', { name: /^live-1/ }).click();
    await page.getByRole('button', { name: 'Follow this thread live' }).click();
    await expect.poll(() => page.locator('#status').innerText()).toContain('following live-1');
    const started = fetch(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ threadId: 'live-1', agentId: 'slow', messages: [{ role: 'user', content: 'take your time' }] }),
    }).then((r) => r.text());
    const run = page.locator('#run');
    await expect.poll(() => run.locator('[data-termination]').getAttribute('data-termination'), { timeout: 10_000 }).toBe('running');
    await expect
      .poll(
        async () =>
          (
            await run
              .locator('pre.answer')
              .innerText()
              .catch(() => '')
          ).length,
        { timeout: 10_000 },
      )
      .toBeGreaterThan(0);
    // The connection drops mid-run (every socket between the page and the server cut); the page
    // reconnects from the last frame it had, and what it missed comes in the backlog.
    proxy.cut();
    await started;
    await expect.poll(() => run.locator('[data-termination]').getAttribute('data-termination'), { timeout: 15_000 }).toBe('natural_end');
    expect(await run.locator('pre.answer').innerText()).toBe(
      'This answer takes its time: one piece every tenth of a second, twenty pieces in all, so you can cancel.',
    );
    expect(resumedFrom.length).toBeGreaterThan(0);
    expect(await page.locator('#status').innerText()).toMatch(/run .* finished \(natural_end\)/);
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-live.png'), fullPage: true });
    await page.getByRole('button', { name: 'Stop following' }).click();
    // The one console line the cut itself causes: the browser reports the stream it lost.
    expect(problems.filter((p) => p !== 'error: Failed to load resource: net::ERR_INCOMPLETE_CHUNKED_ENCODING')).toEqual([]);
    await page.close();
    proxy.close();
  });

  it('replays a tampered transcript and names where it diverged, side by side; a recorded one is identical; accessible', async () => {
    const [header, ...rest] = readFileSync(RUN46, 'utf8').split('\n');
    const tampered = join(mkdtempSync(join(tmpdir(), 'awaken-tampered-')), 'tampered.jsonl');
    writeFileSync(tampered, [(header as string).replace('"text":"scenario: observability-spans"', '"text":"scenario: something else"'), ...rest].join('\n'));
    const { page, problems } = await newPage();
    await page.goto(`${server.url}/inspector/`);
    await page.getByRole('button', { name: 'Replay a transcript' }).click();
    await page.getByLabel('Upload a transcript (.jsonl)').setInputFiles(tampered);
    await page.getByRole('button', { name: 'Replay', exact: true }).click();
    const result = page.locator('#replay-result [data-verdict]');
    await expect.poll(() => result.getAttribute('data-verdict')).toBe('diverged');
    expect(await result.locator('p').first().innerText()).toBe('Diverged — tampered.jsonl, line 18 (llm record).');
    expect(await result.locator('[data-port]').getAttribute('data-port')).toBe('llm');
    const changed = result.locator('table.side-by-side tr[data-op="changed"]');
    expect(await changed.locator('td:nth-child(1) mark').innerText()).toBe('messages[1].content[0].text: "scenario: observability-spans"');
    expect(await changed.locator('td:nth-child(2) mark').innerText()).toBe('messages[1].content[0].text: "scenario: something else"');
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-replay.png'), fullPage: true });
    expect(await seriousViolations(page)).toEqual([]);
    // A recorded one, picked by name: identical.
    await page.getByLabel('Upload a transcript (.jsonl)').setInputFiles([]);
    await page.getByLabel('or pick a recorded one').selectOption('corpus-approval.jsonl');
    await page.getByRole('button', { name: 'Replay', exact: true }).click();
    await expect.poll(() => result.getAttribute('data-verdict')).toBe('identical');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('forks a recorded run at a step with an edit and a scripted model, and shows the two runs side by side from where they part; accessible', async () => {
    const { page, problems } = await newPage();
    await page.goto(`${server.url}/inspector/`);
    await page.getByRole('button', { name: 'Replay a transcript' }).click();
    await page.getByLabel('or pick a recorded one').selectOption('corpus-one-tool.jsonl');
    // As it is: the recording answers the rest, and the runs do not part.
    await page.getByLabel('Fork at step').fill('1');
    await page.getByRole('button', { name: 'Fork', exact: true }).click();
    const fork = page.locator('#fork-result .fork');
    await fork.waitFor();
    expect(await fork.locator('p').first().innerText()).toBe(
      'The fork went as the recording did — corpus-one-tool.jsonl forked at step 1; inferences answered by the recording: 1, by your model: 0.',
    );
    // A bad edit line is named, and nothing is sent.
    await page.getByLabel(/^Edits, one a line/).fill('/agent/system_prompt');
    await page.getByRole('button', { name: 'Fork', exact: true }).click();
    const doc = readFileSync(join(repo, 'docs/inspector.md'), 'utf8').replace(/\s+/g, ' ');
    const shown = /`(Edit line 1: give PATH=JSON \([^`]*\))`/.exec(doc)?.[1];
    expect(shown).toBe('Edit line 1: give PATH=JSON (/agent/system_prompt="Be brief.")');
    await expect.poll(() => page.locator('#error').innerText()).toBe(shown);
    // An edited prompt without a model: the server says a model must answer, naming the step.
    await page.getByLabel(/^Edits, one a line/).fill('/agent/system_prompt="Be brief."');
    await page.getByRole('button', { name: 'Fork', exact: true }).click();
    await expect
      .poll(() => page.locator('#error').innerText())
      .toBe(
        '/v1/inspector/fork: 400 step 2: the request differs from the recorded one at messages[0].content[0].text: a model must answer from here (--model)',
      );
    // With a scripted model: the runs part at step 2, side by side.
    await page.getByLabel(/^A scripted model/).fill('[{"text": "Brief."}]');
    await page.getByRole('button', { name: 'Fork', exact: true }).click();
    await expect.poll(() => fork.getAttribute('data-parted-at')).toBe('2');
    expect(await fork.locator('p').first().innerText()).toBe(
      'The runs part at step 2 — corpus-one-tool.jsonl forked at step 1; inferences answered by the recording: 0, by your model: 1.',
    );
    const rows = await fork
      .locator('table.fork-steps tbody tr')
      .evaluateAll((trs) => trs.map((tr) => [tr.className, ...[...tr.children].map((c) => (c as unknown as { innerText: string }).innerText)]));
    expect(rows).toEqual([
      ['changed', '2 (they part here)', 'The echo said ping.', 'Brief.'],
      ['ends changed', 'End', 'natural_end after 2 steps: The echo said ping.', 'natural_end after 2 steps: Brief.'],
    ]);
    const download = fork.getByRole('link', { name: "Download the fork's transcript (corpus-one-tool.fork-1.jsonl)" });
    expect(await download.getAttribute('download')).toBe('corpus-one-tool.fork-1.jsonl');
    expect(await page.locator('#error').innerText()).toBe('');
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-fork.png'), fullPage: true });
    expect(await seriousViolations(page)).toEqual([]);
    expect(problems).toEqual(['error: Failed to load resource: the server responded with a status of 400 (Bad Request)']);
    await page.close();
  });

  it('with API tokens: the page asks for one, sends it as a header (never in a URL), and reads the threads', async () => {
    await fetch(`${guarded.url}/v1/threads`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer inspector-secret-token' },
      body: JSON.stringify({ id: 'mine-1' }),
    });
    const { page, urls } = await newPage();
    const authorized: string[] = [];
    page.on('request', (r) => {
      if (r.headers()['authorization'] === 'Bearer inspector-secret-token') authorized.push(new URL(r.url()).pathname);
    });
    await page.goto(`${guarded.url}/inspector/`);
    await expect.poll(() => page.locator('#status').innerText()).toContain('needs an API token');
    expect(await page.getByLabel('API token').isVisible()).toBe(true);
    await page.getByLabel('API token').fill('inspector-secret-token');
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.getByRole('button', { name: /^mine-1/ }).click();
    await page.getByRole('button', { name: 'Follow this thread live' }).click();
    await expect.poll(() => page.locator('#status').innerText()).toContain('following mine-1');
    expect(authorized).toEqual(expect.arrayContaining(['/v1/inspector/threads', '/v1/inspector/transcripts', '/v1/threads/mine-1/stream']));
    expect(urls.filter((u) => u.includes('inspector-secret-token'))).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-token.png') });
    await page.close();
  });
});
