import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, seriousViolations } from '../support/browser.ts';
import { repo, startDemoAndSlow, type ServeProcess } from '../support/serve-process.ts';

/**
 * Finding things in the studio (docs/inspector.md → Finding things, Links): a server with 2,000
 * threads, a few of them with runs it served and recorded; the page pages through them, searches
 * them by id, title and run id, filters them by agent and status, and every thread, run and step has
 * an address that survives a reload and the browser's back button. Headless Chromium, web security
 * on; axe-core finds no serious or critical violation on any view. Screenshots go to
 * test-artifacts/browser/studio-*.png.
 */

const ARTIFACTS = join(repo, 'test-artifacts/browser');
const THREADS = 2_000;
let server: ServeProcess;
let browser: Browser;
let demoRun = '';
let slowRun = '';

const pad = (n: number): string => String(n).padStart(4, '0');

async function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

async function newPage(): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  return { page, problems };
}

const threadButtons = (page: Page): Promise<string[]> =>
  page.locator('#threads button[data-thread]').evaluateAll((els) => els.map((e) => e.getAttribute('data-thread') as string));

beforeAll(async () => {
  const assets = mkdtempSync(join(tmpdir(), 'awaken-studio-page-'));
  await build({ configFile: join(repo, 'inspector/vite.config.ts'), mode: 'production', build: { outDir: assets, emptyOutDir: true }, logLevel: 'error' });
  const record = mkdtempSync(join(tmpdir(), 'awaken-studio-runs-'));
  server = await startDemoAndSlow(['--record', record], { AWAKEN_INSPECTOR_ASSETS: assets });
  for (let i = 1; i <= THREADS; i += 50) {
    await Promise.all(
      Array.from({ length: 50 }, async (_, k) => {
        const n = i + k;
        const r = await post('/v1/threads', { id: `t-${pad(n)}`, title: `Ticket ${pad(n)}` });
        expect(r.status).toBe(201);
      }),
    );
  }
  const demo = await post('/v1/runs', { threadId: 't-0007', messages: [{ role: 'user', content: 'weather in Oslo?' }] });
  await demo.text();
  demoRun = demo.headers.get('x-awaken-run-id') as string;
  const slow = await post('/v1/runs', { threadId: 't-0042', agentId: 'slow', messages: [{ role: 'user', content: 'take your time' }] });
  await slow.text();
  slowRun = slow.headers.get('x-awaken-run-id') as string;
  browser = await launchChromium();
  mkdirSync(ARTIFACTS, { recursive: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('finding things in the studio', () => {
  it('pages through 2,000 threads, searches them by id, title and run id, and filters them by agent; accessible', async () => {
    const { page, problems } = await newPage();
    await page.goto(`${server.url}/inspector/`);
    await expect.poll(() => page.locator('#threads-page').innerText()).toBe(`1–50 of ${THREADS}`);
    expect(await page.locator('#status').innerText()).toBe(`${THREADS} threads`);
    expect(await page.getByRole('button', { name: 'Previous' }).isDisabled()).toBe(true);
    const first = await threadButtons(page);
    expect(first).toHaveLength(50);
    await page.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => page.locator('#threads-page').innerText()).toBe(`51–100 of ${THREADS}`);
    const second = await threadButtons(page);
    expect(second).toHaveLength(50);
    expect(second.filter((id) => first.includes(id))).toEqual([]);
    expect(await seriousViolations(page)).toEqual([]);
    // By id: one thread, on the first page again.
    await page.getByLabel('Search threads').fill('t-1999');
    await expect.poll(() => threadButtons(page)).toEqual(['t-1999']);
    expect(await page.locator('#threads-page').innerText()).toBe('1–1 of 1');
    // By title, in any case: Ticket 1200 to Ticket 1299.
    await page.getByLabel('Search threads').fill('ticket 12');
    await expect.poll(() => page.locator('#threads-page').innerText()).toBe('1–50 of 100');
    await page.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => page.locator('#threads-page').innerText()).toBe('51–100 of 100');
    expect((await threadButtons(page)).every((id) => /^t-12\d\d$/.test(id))).toBe(true);
    expect(await page.getByRole('button', { name: 'Next' }).isDisabled()).toBe(true);
    // By a run's id: the thread it ran on.
    await page.getByLabel('Search threads').fill(slowRun);
    await expect.poll(() => threadButtons(page)).toEqual(['t-0042']);
    // By agent: the thread the slow agent ran on, with what its last run did.
    await page.getByLabel('Search threads').fill('');
    await page.getByLabel('Run by agent').selectOption('slow');
    await expect.poll(() => threadButtons(page)).toEqual(['t-0042']);
    expect(await page.locator('#threads li .meta').innerText()).toBe('Ticket 0042 · slow · natural_end · 1 run');
    await page.getByLabel('Run status').selectOption('running');
    await expect.poll(() => page.locator('#threads .note').innerText()).toBe('No thread matches.');
    await page.getByLabel('Run status').selectOption('');
    await page.getByLabel('Run by agent').selectOption('');
    await page.getByLabel('a run ended in error').check();
    await expect.poll(() => page.locator('#threads .note').innerText()).toBe('No thread matches.');
    await page.screenshot({ path: join(ARTIFACTS, 'studio-threads.png') });
    expect(await seriousViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('a thread, a run and a step each have an address: opened from a link, kept through a reload, and back goes back', async () => {
    const { page, problems } = await newPage();
    await page.goto(`${server.url}/inspector/#/threads/t-0007/runs/${demoRun}/steps/2`);
    const run = page.locator('#run');
    await expect.poll(() => run.locator('[data-termination]').first().getAttribute('data-termination')).toBe('natural_end');
    expect(await page.locator('#runs-title').innerText()).toBe('Runs of t-0007');
    expect(await run.locator('details.step[data-step="2"]').getAttribute('open')).not.toBeNull();
    await page.reload();
    await expect.poll(() => run.locator('[data-termination]').first().getAttribute('data-termination')).toBe('natural_end');
    expect(await run.locator('details.step[data-step="2"]').getAttribute('open')).not.toBeNull();
    expect(await page.locator('#run-title').innerText()).toBe(`Run ${demoRun}`);
    // A run's address without a step opens none of them but the first; opening one puts it in the address.
    await page.goto(`${server.url}/inspector/#/threads/t-0007/runs/${demoRun}`);
    await page.reload();
    await expect.poll(() => run.locator('details.step[data-step="1"]').getAttribute('open')).not.toBeNull();
    expect(await run.locator('details.step[data-step="2"]').getAttribute('open')).toBeNull();
    await run.locator('details.step[data-step="2"] > summary').click();
    await expect.poll(() => new URL(page.url()).hash).toBe(`#/threads/t-0007/runs/${demoRun}/steps/2`);
    // Another thread picked by hand: the address follows; back returns to the run.
    await page.getByLabel('Search threads').fill('t-0042');
    await page.getByRole('button', { name: /^t-0042/ }).click();
    await expect.poll(() => new URL(page.url()).hash).toBe('#/threads/t-0042');
    await page.getByRole('button', { name: new RegExp(`^${slowRun} · `) }).click();
    await expect.poll(() => new URL(page.url()).hash).toBe(`#/threads/t-0042/runs/${slowRun}`);
    await expect
      .poll(() => run.locator('pre.answer').first().innerText())
      .toBe('This answer takes its time: one piece every tenth of a second, twenty pieces in all, so you can cancel.');
    await page.goBack();
    await page.goBack();
    await expect.poll(() => page.locator('#run-title').innerText()).toBe(`Run ${demoRun}`);
    expect(await page.locator('#runs-title').innerText()).toBe('Runs of t-0007');
    // A run the thread does not have: said, not a blank page.
    await page.goto(`${server.url}/inspector/#/threads/t-0007/runs/run-nope`);
    await page.reload();
    await expect.poll(() => run.locator('p.note').innerText()).toBe('No run run-nope on this thread.');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('the replay view finds a recorded transcript by run id among the recorded ones, and replays it identical; accessible', async () => {
    const { page, problems } = await newPage();
    await page.goto(`${server.url}/inspector/#/replay`);
    await expect.poll(() => page.locator('#replay-count').innerText()).toBe('2 recorded transcripts.');
    await page.getByLabel('Find a recorded one (name, thread or run id)').fill(slowRun);
    await expect.poll(() => page.locator('#replay-pick option').count()).toBe(2);
    expect(await page.locator('#replay-count').innerText()).toBe('1 recorded transcript.');
    const name = (await page.locator('#replay-pick option').nth(1).getAttribute('value')) as string;
    expect(name).toContain('t~2d0042');
    await page.getByLabel('or pick a recorded one').selectOption(name);
    await page.getByRole('button', { name: 'Replay', exact: true }).click();
    await expect.poll(() => page.locator('#replay-result [data-verdict]').getAttribute('data-verdict')).toBe('identical');
    await page.getByLabel('Find a recorded one (name, thread or run id)').fill('nothing-like-this');
    await expect.poll(() => page.locator('#replay-count').innerText()).toBe('No recorded transcript matches.');
    await page.screenshot({ path: join(ARTIFACTS, 'studio-replay.png') });
    expect(await seriousViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });
});
