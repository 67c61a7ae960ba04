import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, seriousViolations, startDev } from '../support/browser.ts';
import type { ServeProcess } from '../support/serve-process.ts';
import { repo } from '../support/serve-process.ts';

/**
 * The studio's chat panel (inspector/src/chat.ts) in a real browser, against a real
 * `awaken dev --app spec/browser/fixtures/studio-chat-app.ts` process (scripted models: no key, no
 * network; runs recorded by default): pick an agent, send a message, watch the answer stream in
 * (reasoning folded, the tool call with its arguments), approve the call with its button and see
 * the result and the final text, follow the run's timeline link and come back to the thread (its
 * history loaded from the server), answer a tool that asks for a payload, deny a call on a new
 * thread, and cancel a slow run while its tool reports progress. axe-core finds no serious or
 * critical violation; the console stays free of errors and warnings (a client's repair warning is
 * one). A screenshot goes to test-artifacts/browser/studio-chat.png.
 */

const ARTIFACTS = join(repo, 'test-artifacts/browser');
const APP = 'spec/browser/fixtures/studio-chat-app.ts';
let assets = '';
let dev: ServeProcess;
let guarded: ServeProcess | undefined;
let browser: Browser;

async function newPage(): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1300, height: 1000 } });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  return { page, problems };
}

/** The runs the server holds for a thread: id and how each ended. */
async function runsOf(threadId: string): Promise<{ run_id: string; termination?: { type: string } }[]> {
  const r = await fetch(`${dev.url}/v1/runs?thread_id=${encodeURIComponent(threadId)}&limit=50`);
  return ((await r.json()) as { items: { run_id: string; termination?: { type: string } }[] }).items;
}

const threadOf = (page: Page): string => decodeURIComponent(/^#\/chat\/(.+)$/.exec(new URL(page.url()).hash)?.[1] ?? '');

beforeAll(async () => {
  assets = mkdtempSync(join(tmpdir(), 'awaken-studio-chat-page-'));
  await build({ configFile: join(repo, 'inspector/vite.config.ts'), mode: 'production', build: { outDir: assets, emptyOutDir: true }, logLevel: 'error' });
  [dev, guarded] = await Promise.all([
    startDev(APP, { AWAKEN_INSPECTOR_ASSETS: assets }),
    startDev(APP, { AWAKEN_INSPECTOR_ASSETS: assets, AWAKEN_API_TOKEN: 'studio-chat-token' }),
  ]);
  browser = await launchChromium();
  mkdirSync(ARTIFACTS, { recursive: true });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  for (const d of [dev, guarded]) {
    await d?.stop();
    // `awaken dev` records into a temporary folder of its own.
    const record = /timelines of the runs recorded in ([^\s)]+)/.exec(d?.log() ?? '')?.[1];
    if (record?.startsWith(tmpdir())) rmSync(record, { recursive: true, force: true });
  }
  if (assets !== '') rmSync(assets, { recursive: true, force: true });
});

describe('the studio chat panel against awaken dev', () => {
  it('picks an agent, streams the answer, approves a tool call with its button, links the timeline, reloads the thread, answers with a payload; accessible', async () => {
    const { page, problems } = await newPage();
    await page.goto(`${dev.url}/inspector/#/chat`);
    const view = page.locator('#chat-view');
    await expect.poll(() => view.isVisible()).toBe(true);
    const agent = page.getByLabel('Agent', { exact: true }).and(page.locator('#chat-agent'));
    await expect.poll(() => agent.locator('option').allInnerTexts()).toEqual(['concierge', 'worker']);
    await agent.selectOption('concierge');
    await page.getByRole('textbox', { name: 'Message' }).fill("Book a table for two at Luigi's");
    await page.getByRole('button', { name: 'Send' }).click();

    // The call waits for an approval: its arguments, the reasoning folded before it.
    const book = page.locator('#chat-log section.chat-tool[data-call-id="call_book"]');
    await expect.poll(() => book.getAttribute('data-state')).toBe('approval-requested');
    expect(await book.locator('h4').innerText()).toBe('book_table [call_book] · waiting for your answer');
    expect(JSON.parse(await book.locator('pre.chat-args').innerText())).toEqual({ restaurant: "Luigi's", people: 2 });
    const reasoning = page.locator('#chat-log details.chat-fold').filter({ hasText: 'Reasoning' });
    expect(await reasoning.getAttribute('open')).toBeNull();
    expect(await reasoning.locator('.chat-reasoning').textContent()).toBe('The user wants a table: book it once they approve.');
    expect(await page.locator('#chat-log .chat-msg.user').innerText()).toContain("Book a table for two at Luigi's");
    // The thread is in the address, and the server holds it: the run waits.
    const thread = threadOf(page);
    expect(thread).toMatch(/^chat-/);
    await expect.poll(async () => (await runsOf(thread)).map((r) => r.termination?.type)).toEqual(['suspended']);
    expect(await seriousViolations(page)).toEqual([]);

    expect(await book.locator('.chat-question').innerText()).toBe("Permission required for tool 'book_table'");
    await book.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => book.getAttribute('data-state')).toBe('output-available');
    // The button is gone with its question; the focus is on its tool call, not lost to the page.
    expect(
      await page.evaluate(() =>
        (globalThis as unknown as { document: { activeElement: { getAttribute(name: string): string | null } | null } }).document.activeElement?.getAttribute(
          'data-focus',
        ),
      ),
    ).toBe('call_book');
    expect(JSON.parse(await book.locator('pre.chat-output').innerText())).toEqual({ booked: true, restaurant: "Luigi's", people: 2 });
    await expect.poll(() => page.locator('#chat-log .chat-msg.assistant .chat-text').allInnerTexts()).toEqual(['Here is where the booking stands.']);
    const [run] = await runsOf(thread);
    expect(run?.termination?.type).toBe('natural_end');
    const runId = run?.run_id as string;
    await expect.poll(() => page.locator('#chat-status').innerText()).toBe(`Run ${runId} finished.`);

    // The run's timeline, by its link (the run was recorded), then back to the thread: its history from the server.
    const link = page.getByRole('link', { name: `Timeline of run ${runId}` });
    expect(await link.getAttribute('href')).toBe(`#/threads/${encodeURIComponent(thread)}/runs/${encodeURIComponent(runId)}`);
    await link.click();
    await expect.poll(() => page.locator('#runs-view').isVisible()).toBe(true);
    await expect.poll(() => page.locator('#run-title').innerText()).toBe(`Run ${runId}`);
    await expect.poll(() => page.locator('#run [data-termination]').last().getAttribute('data-termination')).toBe('natural_end');
    await page.goto(`${dev.url}/inspector/#/chat/${encodeURIComponent(thread)}`);
    await page.reload();
    await expect.poll(() => page.locator('#chat-log .chat-msg').count()).toBe(3);
    expect(await page.locator('#chat-log section.chat-tool[data-call-id="call_book"]').getAttribute('data-state')).toBe('output-available');
    expect(await page.locator('#chat-log .chat-text').allInnerTexts()).toEqual(["Book a table for two at Luigi's", 'Here is where the booking stands.']);
    await expect.poll(() => page.locator('#chat-agent').inputValue()).toBe('concierge');

    // A tool that takes the answer as its result: its question, the payload form open, a JSON answer.
    await page.getByRole('textbox', { name: 'Message' }).fill('At what time?');
    await page.keyboard.press('Enter');
    const time = page.locator('#chat-log section.chat-tool[data-call-id="call_time"]');
    await expect.poll(() => time.getAttribute('data-state')).toBe('approval-requested');
    expect(await time.locator('.chat-question').innerText()).toBe('Which time?');
    const payload = time.getByRole('textbox', { name: 'Payload for pick_time' });
    expect(await payload.isVisible()).toBe(true);
    await payload.fill('{"time": 19:30}');
    await time.getByRole('button', { name: 'Send answer' }).click();
    await expect.poll(() => time.locator('[role="alert"]').innerText()).toMatch(/^The payload is not JSON: /);
    await payload.fill('{"time": "19:30"}');
    await time.getByRole('button', { name: 'Send answer' }).click();
    await expect.poll(() => time.getAttribute('data-state')).toBe('output-available');
    expect(JSON.parse(await time.locator('pre.chat-output').innerText())).toEqual({ time: '19:30' });
    await expect.poll(() => page.locator('#chat-log .chat-msg.assistant .chat-text').last().innerText()).toBe('Noted the time.');
    await expect.poll(async () => (await runsOf(thread)).map((r) => r.termination?.type).sort()).toEqual(['natural_end', 'natural_end']);
    await page.screenshot({ path: join(ARTIFACTS, 'studio-chat.png'), fullPage: true });
    expect(await seriousViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('a new thread: denies a call; another: cancels a slow run while its tool reports progress', async () => {
    const { page, problems } = await newPage();
    await page.goto(`${dev.url}/inspector/#/chat`);
    await expect.poll(() => page.locator('#chat-agent option').count()).toBe(2);
    await page.getByRole('textbox', { name: 'Message' }).fill('Book a table');
    await page.getByRole('button', { name: 'Send' }).click();
    const first = page.locator('#chat-log section.chat-tool[data-call-id="call_book"]');
    await expect.poll(() => first.getAttribute('data-state')).toBe('approval-requested');
    const firstThread = threadOf(page);

    // A new thread: nothing of the first one, a new id in the address.
    await page.getByRole('button', { name: 'New thread' }).click();
    await expect.poll(() => page.locator('#chat-log .chat-msg').count()).toBe(0);
    const denied = threadOf(page);
    expect(denied).not.toBe(firstThread);
    expect(await page.locator('.chat-thread-id').innerText()).toBe(denied);
    await page.getByRole('textbox', { name: 'Message' }).fill('Book a table');
    await page.getByRole('button', { name: 'Send' }).click();
    const book = page.locator('#chat-log section.chat-tool[data-call-id="call_book"]');
    await expect.poll(() => book.getAttribute('data-state')).toBe('approval-requested');
    await book.getByRole('button', { name: 'Deny' }).click();
    await expect.poll(() => book.getAttribute('data-state')).toBe('output-denied');
    await expect.poll(() => page.locator('#chat-log .chat-msg.assistant .chat-text').allInnerTexts()).toEqual(['Here is where the booking stands.']);
    expect((await runsOf(denied)).map((r) => r.termination?.type)).toEqual(['natural_end']);

    // The slow agent, cancelled while its tool works: the run ends cancelled on the server.
    await page.getByRole('button', { name: 'New thread' }).click();
    await expect.poll(() => threadOf(page)).not.toBe(denied);
    const slow = threadOf(page);
    await page.locator('#chat-agent').selectOption('worker');
    await page.getByRole('textbox', { name: 'Message' }).fill('Write the report');
    await page.getByRole('button', { name: 'Send' }).click();
    const work = page.locator('#chat-log section.chat-tool[data-call-id="call_work"]');
    await expect.poll(() => work.locator('.chat-progress').innerText()).toBe(' running · the report: started · 25%');
    expect(await work.getByRole('progressbar', { name: 'Progress of work' }).getAttribute('value')).toBe('0.25');
    expect(await page.getByRole('button', { name: 'Send' }).isDisabled()).toBe(true);
    expect(await page.locator('#chat-log').getAttribute('aria-busy')).toBe('true');
    // An A2UI surface is shown as its JSON, folded.
    const surface = page.locator('#chat-log details.chat-fold').filter({ hasText: 'A2UI surface from call_work (JSON, 1 update)' });
    expect(await surface.getAttribute('open')).toBeNull();
    expect(JSON.parse((await surface.locator('pre.chat-activity').textContent()) ?? '')).toMatchObject([
      { activityType: 'a2ui', content: { messages: [{ beginRendering: { surfaceId: 'report' } }] } },
    ]);
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await expect.poll(() => page.locator('#chat-status').innerText()).toMatch(/^Run \S+ cancelled\.$/);
    // The status is written when the cancel is answered; the button and the log settle when the stream has ended, just after.
    await expect.poll(() => page.getByRole('button', { name: 'Cancel run' }).isDisabled()).toBe(true);
    await expect.poll(() => page.locator('#chat-log').getAttribute('aria-busy')).toBe('false');
    // Ended cancelled, not by the tool's 30 s: the cancel reached the run.
    await expect.poll(async () => (await runsOf(slow)).map((r) => r.termination?.type), { timeout: 10_000 }).toEqual(['cancelled']);
    const [run] = await runsOf(slow);
    expect(await page.locator('#chat-status').innerText()).toBe(`Run ${run?.run_id ?? ''} cancelled.`);

    // The first thread, opened again by its address: its history says the call still waits; approved from there, the run ends.
    await page.goto(`${dev.url}/inspector/#/chat/${encodeURIComponent(firstThread)}`);
    await page.reload();
    const waiting = page.locator('#chat-log section.chat-tool[data-call-id="call_book"]');
    await expect.poll(() => waiting.getAttribute('data-state')).toBe('approval-requested');
    await waiting.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => page.locator('#chat-log section.chat-tool[data-call-id="call_book"]').getAttribute('data-state')).toBe('output-available');
    await expect.poll(() => page.locator('#chat-log .chat-msg.assistant .chat-text').allInnerTexts()).toEqual(['Here is where the booking stands.']);
    expect((await runsOf(firstThread)).map((r) => r.termination?.type)).toEqual(['natural_end']);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('a cancel that finds the run gone (its answer a 404) still stops the stream, and says no error', async () => {
    const { page, problems } = await newPage();
    await page.goto(`${dev.url}/inspector/#/chat`);
    await page.getByRole('button', { name: 'New thread' }).click();
    await expect.poll(() => threadOf(page)).not.toBe('');
    const thread = threadOf(page);
    await page.locator('#chat-agent').selectOption('worker');
    await page.getByRole('textbox', { name: 'Message' }).fill('Write the report');
    await page.getByRole('button', { name: 'Send' }).click();
    const work = page.locator('#chat-log section.chat-tool[data-call-id="call_work"]');
    await expect.poll(() => work.locator('.chat-progress').innerText()).toBe(' running · the report: started · 25%');
    // The server's answer to the cancel is a 404, as for a run that ended while the cancel was on its way.
    await page.route('**/v1/runs/*/cancel', (route) =>
      route.fulfill({ status: 404, contentType: 'application/json', body: JSON.stringify({ error: 'run not found', code: 'run_not_found' }) }),
    );
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await expect.poll(() => page.locator('#chat-status').innerText()).toMatch(/^Run \S+ cancelled\.$/);
    // The status is said at once; the log is drawn again (no longer busy) at the next frame.
    await expect.poll(() => page.locator('#chat-log').getAttribute('aria-busy')).toBe('false');
    expect(await page.locator('#chat-error').innerText()).toBe('');
    // The run the page let go is still running on the server: cancelled from here.
    const [running] = await runsOf(thread);
    const cancelled = await fetch(`${dev.url}/v1/runs/${encodeURIComponent(running?.run_id ?? thread)}/cancel`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
    });
    expect(cancelled.status).toBe(202);
    await expect.poll(async () => (await runsOf(thread)).map((r) => r.termination?.type), { timeout: 10_000 }).toEqual(['cancelled']);
    expect(problems.filter((p) => !p.includes('404'))).toEqual([]);
    await page.close();
  });

  it('a payload half written on one thread is not carried to another, where a call has the same id', async () => {
    const { page, problems } = await newPage();
    await page.goto(`${dev.url}/inspector/#/chat`);
    const ask = async (): Promise<ReturnType<Page['locator']>> => {
      await page.getByRole('button', { name: 'New thread' }).click();
      await page.locator('#chat-agent').selectOption('concierge');
      await page.getByRole('textbox', { name: 'Message' }).fill('Book a table');
      await page.getByRole('button', { name: 'Send' }).click();
      const book = page.locator('#chat-log section.chat-tool[data-call-id="call_book"]');
      await expect.poll(() => book.getAttribute('data-state')).toBe('approval-requested');
      await book.locator('summary', { hasText: 'Answer with a payload (JSON)' }).click();
      return book.getByRole('textbox', { name: 'Payload for book_table' });
    };
    const first = await ask();
    await first.fill('{"note": "half written"}');
    const second = await ask();
    expect(await second.inputValue()).toBe('{}');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('with API tokens: once the studio has a token, the chat sends it as a header (never in a URL) on every call, the answers included', async () => {
    const server = guarded as typeof dev;
    const { page } = await newPage();
    const calls: { path: string; authorized: boolean }[] = [];
    const urls: string[] = [];
    page.on('request', (r) => {
      urls.push(r.url());
      if (new URL(r.url()).pathname.startsWith('/v1/'))
        calls.push({ path: `${r.method()} ${new URL(r.url()).pathname}`, authorized: r.headers()['authorization'] === 'Bearer studio-chat-token' });
    });
    await page.goto(`${server.url}/inspector/#/chat`);
    await page.getByLabel('API token').fill('studio-chat-token');
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.getByRole('textbox', { name: 'Message' }).fill('Book a table');
    await page.getByRole('button', { name: 'Send' }).click();
    const book = page.locator('#chat-log section.chat-tool[data-call-id="call_book"]');
    await expect.poll(() => book.getAttribute('data-state')).toBe('approval-requested');
    expect(await page.locator('#chat-agent').inputValue()).toBe('concierge');
    await book.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => page.locator('#chat-log .chat-msg.assistant .chat-text').allInnerTexts()).toEqual(['Here is where the booking stands.']);
    const chats = calls.filter((c) => c.path === 'POST /v1/ai-sdk/chat');
    expect(chats).toEqual([
      { path: 'POST /v1/ai-sdk/chat', authorized: true },
      { path: 'POST /v1/ai-sdk/chat', authorized: true },
    ]);
    expect(calls.filter((c) => c.path === 'GET /v1/capabilities').at(-1)?.authorized).toBe(true);
    expect(urls.filter((u) => u.includes('studio-chat-token'))).toEqual([]);
    await page.close();
  });
});
