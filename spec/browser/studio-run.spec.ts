import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syntheticTranscript } from '../../bench/studio.ts';
import { repo, startDemoAndSlow, type ServeProcess } from '../support/serve-process.ts';
import { launchChromium, seriousViolations } from '../support/browser.ts';

/**
 * A run's view in the inspector (docs/inspector.md), in headless Chromium: the run as a waterfall on
 * its clock (a failed call's bar marked failed, a suspended one's waiting; a bar opens its step), what
 * a suspended call waits for, state diffs without the runtime's keys until the toggle shows them, the
 * request as a chat or as raw JSON; axe-core finds no serious or critical violation. The page is the
 * one the package builds, served by `awaken serve --record DIR` with corpus runs in DIR. Then
 * `renderTimeline` and `openStep` on a page of their own, with a 5,000-step run: steps put on the
 * page as they are needed, and a step far down opened by index. Screenshot:
 * test-artifacts/browser/studio-waterfall.png.
 */

const ARTIFACTS = join(repo, 'test-artifacts/browser');
let server: ServeProcess;
let browser: Browser;
let harness: { server: Server; url: string } | undefined;

/** A corpus run as a server records one: its header names the thread and run it was served on. */
function servedAs(file: string, threadId: string): string {
  const [first, ...rest] = readFileSync(join(repo, 'fixtures/runs', file), 'utf8').split('\n');
  const header = JSON.parse(first as string) as { request: Record<string, unknown> };
  header.request = { thread_id: threadId, run_id: 'run-1', ...header.request };
  return [JSON.stringify(header), ...rest].join('\n');
}

async function newPage(url: string): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  await page.goto(url);
  return { page, problems };
}

async function openRun(page: Page, thread: string): Promise<void> {
  await page.getByRole('button', { name: `${thread} (1 recorded)` }).click();
  await page.getByRole('button', { name: /^run-1 · .*recorded$/ }).click();
  await expect.poll(() => page.locator('#run [data-termination]').count()).toBe(1);
}

const inViewport = (page: Page, selector: string): Promise<boolean> =>
  page.locator(selector).evaluate((e) => {
    const r = e.getBoundingClientRect();
    return r.top >= 0 && r.top < e.ownerDocument.documentElement.clientHeight;
  });

beforeAll(async () => {
  const assets = mkdtempSync(join(tmpdir(), 'awaken-studio-run-page-'));
  await build({ configFile: join(repo, 'inspector/vite.config.ts'), mode: 'production', build: { outDir: assets, emptyOutDir: true }, logLevel: 'error' });
  const record = mkdtempSync(join(tmpdir(), 'awaken-studio-run-'));
  // A run whose second call fails (the `fail` tool), one left waiting on a confirmation, one whose confirmation came.
  writeFileSync(join(record, 'failing.jsonl'), servedAs('46-observability-spans.jsonl', 'studio-failing'));
  writeFileSync(join(record, 'waiting.jsonl'), servedAs('15-suspension-left-waiting.jsonl', 'studio-waiting'));
  writeFileSync(join(record, 'decided.jsonl'), servedAs('11-suspension-resumed-replay-tool-call.jsonl', 'studio-decided'));
  // A decision sent without an id (its \`decision_id\` is empty): the view leaves the field out.
  writeFileSync(
    join(record, 'anonymous.jsonl'),
    servedAs('11-suspension-resumed-replay-tool-call.jsonl', 'studio-anonymous').replaceAll('"decision_id":"d-c1"', '"decision_id":""'),
  );
  server = await startDemoAndSlow(['--record', record], { AWAKEN_INSPECTOR_ASSETS: assets });
  browser = await launchChromium();
  mkdirSync(ARTIFACTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  harness?.server.close();
});

describe("a run's view in the inspector", () => {
  it('the waterfall: a bar per step, inference and tool call on the run’s clock, the failed call marked; a bar opens its step; accessible', async () => {
    const { page, problems } = await newPage(`${server.url}/inspector/`);
    await openRun(page, 'studio-failing');
    const waterfall = page.getByRole('region', { name: 'Waterfall' });
    // Its bars, by their names: what they are, how long they took, how they ended.
    const names = await waterfall.locator('button.wf-bar-button').evaluateAll((bs) => bs.map((b) => b.getAttribute('aria-label')));
    expect(names).toEqual([
      'step 1, 70 ms, 1 failed',
      'inference scripted-main, 5 ms',
      'tool report, 30 ms',
      'tool fail, 10 ms, failed',
      'step 2, 20 ms',
      'inference scripted-main, 5 ms',
    ]);
    const failedBar = waterfall.getByRole('button', { name: 'tool fail, 10 ms, failed' });
    const row = failedBar.locator('xpath=..');
    expect(await row.getAttribute('class')).toContain('failed');
    expect(await failedBar.locator('.badge.failed').innerText()).toBe('failed');
    // On the run's clock (the run started at +5 ms and ended at +110 ms: 105 ms wide), the call ran from +65 to +75 ms.
    const geometry = await failedBar.locator('.wf-bar').evaluate((b) => [b.style.left, b.style.width]);
    expect(geometry.map((x) => Number.parseFloat(x))).toEqual([expect.closeTo((60 / 105) * 100, 2), expect.closeTo((10 / 105) * 100, 2)]);
    expect(await failedBar.locator('.wf-bar').evaluate((b) => b.getBoundingClientRect().width)).toBeGreaterThan(0);
    // The step's summary is badged too.
    const step1 = page.locator('#run details.step[data-step="1"]');
    expect(await step1.locator('> summary .badge.failed').innerText()).toBe('1 failed');
    // A bar opens its step, scrolled to, its call open.
    await failedBar.click();
    const call = step1.locator('details.tool[data-call-id="c2"]');
    await expect.poll(() => call.getAttribute('open')).not.toBeNull();
    expect(await call.locator('> summary').innerText()).toBe('fail [c2] · failed · 10 ms');
    expect(await inViewport(page, '#run details.tool[data-call-id="c2"]')).toBe(true);
    await page.getByRole('button', { name: 'step 2, 20 ms' }).click();
    const step2 = page.locator('#run details.step[data-step="2"]');
    await expect.poll(() => step2.getAttribute('open')).not.toBeNull();
    expect(await step2.locator('pre.answer').innerText()).toBe('One worked, one failed.');
    expect(await inViewport(page, '#run details.step[data-step="2"]')).toBe(true);
    expect(await page.evaluate(`document.activeElement?.closest('details.step')?.getAttribute('data-step')`)).toBe('2');
    await page.evaluate('scrollTo(0, 0)');
    await page.screenshot({ path: join(ARTIFACTS, 'studio-waterfall.png'), fullPage: true });
    expect(await seriousViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('a suspended call shows what it waits for — the tool, its arguments, the question and its kind — not a null result; a decided one its decision', async () => {
    const { page, problems } = await newPage(`${server.url}/inspector/`);
    await openRun(page, 'studio-waiting');
    const bar = page.getByRole('button', { name: /^tool confirm, \d+ ms, waiting$/ });
    expect(await bar.locator('xpath=..').getAttribute('data-status')).toBe('waiting');
    expect(await page.locator('#run details.step[data-step="1"] > summary .badge.waiting').innerText()).toBe('waiting');
    await bar.click();
    const call = page.locator('#run details.tool[data-call-id="c1"]');
    await expect.poll(() => call.getAttribute('open')).not.toBeNull();
    expect(await call.locator('> summary .badge.waiting').innerText()).toBe('waiting');
    const text = await call.innerText();
    expect(text).toContain('Waiting for a decision');
    const ticket = call.locator('.ticket dl.summary');
    expect(await ticket.innerText()).toBe('Tool\nconfirm\nKind\nconfirm\nPrompt\nConfirm delete?\nResumes by\nreplay tool call\nTicket\nconfirm-c1');
    expect(await call.locator('.ticket pre').first().innerText()).toBe('{\n  "action": "delete"\n}');
    expect(text).not.toContain('Result');
    expect(text).not.toContain('null');
    expect(await seriousViolations(page)).toEqual([]);
    // One whose decision came: what it waited for, then the decision.
    await openRun(page, 'studio-decided');
    const decided = page.locator('#run details.tool[data-call-id="c1"]').first();
    await decided.locator('> summary').click();
    const decidedText = await decided.innerText();
    expect(decidedText).toContain('Waited for a decision');
    expect(decidedText).toContain('Decision\nAction\nresume\nDecision id\nd-c1');
    // A decision without an id: no empty field for it.
    await openRun(page, 'studio-anonymous');
    const anonymous = page.locator('#run details.tool[data-call-id="c1"]').first();
    await anonymous.locator('> summary').click();
    const anonymousText = await anonymous.innerText();
    expect(anonymousText).toContain('Decision\nAction\nresume');
    expect(anonymousText).not.toContain('Decision id');
    expect(anonymousText).not.toContain('decision_id');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('state diffs leave out runtime keys until the toggle shows them; a request is a chat, or its raw JSON; accessible', async () => {
    const { page, problems } = await newPage(`${server.url}/inspector/`);
    await openRun(page, 'studio-failing');
    const step1 = page.locator('#run details.step[data-step="1"]');
    const state = step1.locator('details.state');
    await state.locator('> summary').click();
    const visiblePaths = (): Promise<string[]> =>
      state.locator('tr[data-op]').evaluateAll((rows) => rows.filter((r) => r.getClientRects().length > 0).map((r) => r.children[1]?.textContent ?? ''));
    expect(await visiblePaths()).toEqual(['/revision']);
    expect(await state.locator('.runtime-note').innerText()).toMatch(/^\d+ changes to runtime keys not shown/);
    const toggle = page.getByRole('button', { name: 'Show runtime keys' });
    expect(await toggle.getAttribute('aria-pressed')).toBe('false');
    await toggle.click();
    expect(await toggle.getAttribute('aria-pressed')).toBe('true');
    expect(await visiblePaths()).toEqual(
      expect.arrayContaining(['/revision', '/extensions/__runtime.tool_call_states', '/extensions/__runtime.run_lifecycle']),
    );
    expect(await state.locator('.runtime-note').isVisible()).toBe(false);
    await toggle.click();
    expect(await visiblePaths()).toEqual(['/revision']);
    // The second step's request: the conversation so far, as a chat.
    const step2 = page.locator('#run details.step[data-step="2"]');
    await step2.locator('> summary').click();
    const request = step2.locator('details.request');
    await request.locator('> summary').click();
    expect(await request.locator('> summary').innerText()).toBe('Request: 5 messages, 5 tools');
    const chat = request.getByRole('list', { name: 'Messages' });
    expect(await chat.locator('> li').evaluateAll((ms) => ms.map((m) => m.getAttribute('data-role')))).toEqual(['system', 'user', 'assistant', 'tool', 'tool']);
    expect(await chat.locator('> li').nth(1).innerText()).toBe('USER\nscenario: observability-spans');
    const assistant = chat.locator('> li').nth(2);
    expect(await assistant.locator('.req-text').innerText()).toBe('Checking two things.');
    expect(await assistant.locator('.req-call').allInnerTexts()).toEqual(['calls report', 'calls fail']);
    expect(await chat.locator('> li').nth(4).innerText()).toBe('TOOL RESULT fail [c2]\nthe tool reported a failure');
    const raw = request.getByRole('button', { name: 'Raw JSON' });
    await raw.click();
    expect(await chat.isVisible()).toBe(false);
    const json = JSON.parse(await request.locator('pre.raw').innerText()) as { role: string; tool_call_id?: string }[];
    expect(json.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool']);
    expect(json[4]?.tool_call_id).toBe('c2');
    await raw.click();
    expect(await chat.isVisible()).toBe(true);
    expect(await request.locator('pre.raw').isVisible()).toBe(false);
    expect(await seriousViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });
});

/** `renderTimeline`, `renderSegment` and `openStep` on a page of their own (built by vite), with the transcripts it is given. */
async function startHarness(files: Record<string, string>): Promise<{ server: Server; url: string }> {
  const src = mkdtempSync(join(tmpdir(), 'awaken-studio-harness-'));
  const out = join(src, 'dist');
  writeFileSync(
    join(src, 'index.html'),
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>harness</title></head><body><main id="view"></main><script type="module" src="./harness.ts"></script></body></html>',
  );
  writeFileSync(
    join(src, 'harness.ts'),
    [
      `import { openStep, renderSegment, renderTimeline } from ${JSON.stringify(join(repo, 'inspector/src/render.ts'))};`,
      `import { timelineOf, transcriptRecords } from ${JSON.stringify(join(repo, 'src/replay/timeline.ts'))};`,
      'const opened: number[] = [];',
      'const timeline = async (name: string) => timelineOf(transcriptRecords(await (await fetch(name)).text()));',
      'Object.assign(globalThis, { opened, openStep, show: async (name: string) => { const view = document.getElementById("view")!; view.replaceChildren(renderTimeline(await timeline(name), { onStepOpen: (i) => opened.push(i) })); }, showSegments: async (names: string[]) => { const view = document.getElementById("view")!; view.replaceChildren(...(await Promise.all(names.map(timeline))).map((t) => renderSegment(t))); } });',
    ].join('\n'),
  );
  await build({ root: src, configFile: false, logLevel: 'error', build: { outDir: out, emptyOutDir: true } });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(out, name), text);
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.jsonl': 'application/x-ndjson' };
  const http = createServer((req, res) => {
    const path = normalize(join(out, new URL(req.url ?? '/', 'http://x').pathname === '/' ? 'index.html' : new URL(req.url ?? '/', 'http://x').pathname));
    try {
      const body = readFileSync(path);
      res.writeHead(200, { 'content-type': types[extname(path)] ?? 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
  return { server: http, url: `http://127.0.0.1:${(http.address() as { port: number }).port}/` };
}

describe('renderTimeline and openStep on a page of their own', () => {
  it('a 5,000-step run: its steps go on the page as needed; openStep opens one far down (scrolled to, its body built) and says false for one that is not there; onStepOpen hears the user', async () => {
    const long = syntheticTranscript(5000, 'long', 'run-long');
    const segments = [
      readFileSync(join(repo, 'fixtures/runs/46-observability-spans.jsonl'), 'utf8'),
      readFileSync(join(repo, 'fixtures/runs/15-suspension-left-waiting.jsonl'), 'utf8'),
    ];
    harness = await startHarness({ 'long.jsonl': long, 'one.jsonl': segments[0] as string, 'two.jsonl': segments[1] as string });
    const { page, problems } = await newPage(harness.url);
    await page.evaluate(`show('long.jsonl')`);
    const steps = page.locator('#view details.step');
    // Not 5,000 summaries, and no step's body but the first's.
    expect(await steps.count()).toBeLessThan(500);
    expect(
      await page.locator('#view details.step h3').evaluateAll((hs) => new Set(hs.map((h) => h.closest('details.step')?.getAttribute('data-step'))).size),
    ).toBe(1);
    expect(await page.evaluate(`document.querySelectorAll('#view *').length`)).toBeLessThan(5000);
    expect(await page.evaluate(`openStep(document.getElementById('view'), 4321)`)).toBe(true);
    const far = page.locator('#view details.step[data-step="4321"]');
    expect(await far.getAttribute('open')).not.toBeNull();
    expect(await far.locator('pre.answer').innerText()).toBe('Step 4321: checking.');
    expect(await inViewport(page, '#view details.step[data-step="4321"]')).toBe(true);
    expect(await page.evaluate(`openStep(document.getElementById('view'), 5001)`)).toBe(false);
    expect(await page.evaluate(`openStep(document.getElementById('view'), 0)`)).toBe(false);
    // The programmatic open is not the user's: onStepOpen has heard nothing yet.
    expect(await page.evaluate(`opened.slice()`)).toEqual([]);
    await page.locator('#view details.step[data-step="7"] > summary').click();
    await page.getByRole('button', { name: /^step 3, \d+ ms$/ }).click();
    expect(await page.evaluate(`opened.slice()`)).toEqual([7, 3]);
    expect(await page.locator('#view details.step[data-step="7"] > summary .badge.failed').innerText()).toBe('1 failed');
    // The end of the list comes into view: the next steps come with it.
    const before = await steps.count();
    await page.locator('#view button.steps-more').scrollIntoViewIfNeeded();
    await expect.poll(() => steps.count()).toBeGreaterThan(before);
    // A run shown segment by segment: given the run's element, the first segment's step; given a segment's, that one's.
    await page.evaluate(`showSegments(['one.jsonl', 'two.jsonl'])`);
    expect(await page.evaluate(`openStep(document.getElementById('view'), 2)`)).toBe(true);
    expect(await page.locator('#view section.segment').nth(0).locator('details.step[data-step="2"]').getAttribute('open')).not.toBeNull();
    expect(await page.evaluate(`openStep(document.querySelectorAll('#view section.segment')[1], 2)`)).toBe(false);
    expect(await page.evaluate(`openStep(document.querySelectorAll('#view section.segment')[1], 1)`)).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  });
});
