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
 * The studio's chat draws A2UI v0.9 surfaces (inspector/src/a2ui.ts, with `@a2ui/lit`'s v0.9
 * renderer) in a real browser, against a real `awaken dev --app
 * spec/browser/fixtures/studio-a2ui-app.ts` process (scripted models: no key, no network): the
 * agent's `render_a2ui` call shows as the form it describes — its heading, its text field holding
 * the data model's value, its button — with the activity's JSON folded beside it; a click on the
 * button is the chat's next user message, worded as the AG-UI route words
 * `forwardedProps.a2uiAction` (`formatA2uiUserAction`), with the value typed into the field as its
 * context. The thread reloaded at its address (a history with no activity) draws the surface again
 * from the call's result, and its click sends the same message. Both catalog ids draw: the seed's (agent `designer`) and CopilotKit's (agent `kit`); a
 * catalog the page does not know (agent `own`) is said beside the JSON, which stays.
 * axe-core finds no serious or critical violation; the console stays free of errors and warnings;
 * no request leaves loopback. A screenshot goes to test-artifacts/browser/studio-a2ui.png.
 */

const ARTIFACTS = join(repo, 'test-artifacts/browser');
const APP = 'spec/browser/fixtures/studio-a2ui-app.ts';
let assets = '';
let dev: ServeProcess;
let browser: Browser;

/** A page with its console errors and warnings, every URL it asked for, and the chat requests' bodies. */
async function newPage(): Promise<{
  page: Page;
  problems: string[];
  urls: string[];
  chats: { messages: { role: string; parts: { type: string; text?: string }[] }[] }[];
}> {
  const page = await browser.newPage({ viewport: { width: 1300, height: 1000 } });
  const problems: string[] = [];
  const urls: string[] = [];
  const chats: { messages: { role: string; parts: { type: string; text?: string }[] }[] }[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('request', (r) => {
    urls.push(r.url());
    if (r.method() === 'POST' && new URL(r.url()).pathname === '/v1/ai-sdk/chat') chats.push(r.postDataJSON());
  });
  return { page, problems, urls, chats };
}

/** The URLs a page asked for off loopback (data: and blob: URLs are the page's own). */
const offLoopback = (urls: readonly string[]): string[] =>
  urls.filter((u) => /^(https?|wss?):/.test(u) && !['localhost', '127.0.0.1', '[::1]'].includes(new URL(u).hostname));

/** The text of the last user message a chat request sent. */
const lastUserText = (body: { messages: { role: string; parts: { type: string; text?: string }[] }[] } | undefined): string | undefined =>
  body?.messages
    .filter((m) => m.role === 'user')
    .at(-1)
    ?.parts.filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('');

const threadOf = (page: Page): string => decodeURIComponent(/^#\/chat\/(.+)$/.exec(new URL(page.url()).hash)?.[1] ?? '');

beforeAll(async () => {
  assets = mkdtempSync(join(tmpdir(), 'awaken-studio-a2ui-page-'));
  await build({ configFile: join(repo, 'inspector/vite.config.ts'), mode: 'production', build: { outDir: assets, emptyOutDir: true }, logLevel: 'error' });
  dev = await startDev(APP, { AWAKEN_INSPECTOR_ASSETS: assets });
  browser = await launchChromium();
  mkdirSync(ARTIFACTS, { recursive: true });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await dev?.stop();
  // `awaken dev` records into a temporary folder of its own.
  const record = /timelines of the runs recorded in ([^\s)]+)/.exec(dev?.log() ?? '')?.[1];
  if (record?.startsWith(tmpdir())) rmSync(record, { recursive: true, force: true });
  if (assets !== '') rmSync(assets, { recursive: true, force: true });
});

describe('the studio chat draws A2UI v0.9 surfaces', () => {
  it('draws the render_a2ui call as a form beside its JSON; a click with an edited field is the next user message', async () => {
    const { page, problems, urls, chats } = await newPage();
    await page.goto(`${dev.url}/inspector/#/chat`);
    await expect.poll(() => page.locator('#chat-agent option').allInnerTexts()).toEqual(['designer', 'kit', 'own']);
    await page.locator('#chat-agent').selectOption('designer');
    await page.getByRole('textbox', { name: 'Message' }).fill('Show me an order form');
    await page.getByRole('button', { name: 'Send' }).click();

    // The surface is drawn: elements, not JSON.
    const surface = page.getByRole('region', { name: 'A2UI surface order-form-1 from call_form' });
    const button = surface.getByRole('button', { name: 'Place the order' });
    await expect.poll(() => button.count()).toBe(1);
    expect(await button.evaluate((b) => b.tagName)).toBe('BUTTON');
    expect(await surface.locator('a2ui-surface h2').innerText()).toBe('Order form');
    const name = surface.getByRole('textbox', { name: 'Name' });
    expect(await name.inputValue()).toBe('Ada Lovelace');
    // Its JSON, folded beside it: the activity as it came.
    const fold = surface.locator('details.chat-fold');
    expect(await fold.locator('summary').innerText()).toBe('A2UI surface order-form-1 from call_form (JSON, 1 update)');
    expect(await fold.getAttribute('open')).toBeNull();
    const [activity] = JSON.parse((await fold.locator('pre.chat-activity').textContent()) ?? '') as {
      activityType: string;
      content: { a2ui_operations: unknown[] };
    }[];
    expect(activity?.activityType).toBe('a2ui-surface');
    expect(activity?.content.a2ui_operations.map((o) => Object.keys(o as object).filter((k) => k !== 'version'))).toEqual([
      ['createSurface'],
      ['updateComponents'],
      ['updateDataModel'],
    ]);
    await expect
      .poll(() => page.locator('#chat-log .chat-msg.assistant .chat-text').allInnerTexts())
      .toEqual(['Here is an order form.', 'The order form is on screen.']);
    await expect.poll(() => page.locator('#chat-status').innerText()).toMatch(/^Run \S+ finished\.$/);
    expect(await seriousViolations(page)).toEqual([]);
    // Drawn once: from its activity, not again from the call's result.
    expect(await page.locator('#chat-log .chat-a2ui').count()).toBe(1);

    // A value typed into the form is the action's context; the click is one user message.
    await name.fill('Ada King');
    await button.click();
    const clicked = 'User performed action "order.submit" on surface "order-form-1" (component: submit). Context: {"name":"Ada King"}';
    await expect.poll(() => chats.length).toBe(2);
    expect(lastUserText(chats[1])).toBe(clicked);
    expect(chats[1]?.messages.filter((m) => m.role === 'user').map((m) => m.parts.length)).toEqual([1, 1]);
    await expect.poll(() => page.locator('#chat-log .chat-msg.user .chat-text').allInnerTexts()).toEqual(['Show me an order form', clicked]);
    await expect.poll(() => page.locator('#chat-log .chat-msg.assistant .chat-text').last().innerText()).toBe('Your order is placed.');
    // The server keeps it as the thread's user message.
    const thread = threadOf(page);
    const history = (await (await fetch(`${dev.url}/v1/threads/${encodeURIComponent(thread)}/messages?limit=50`)).json()) as {
      messages: { role: string; content: { text?: string }[] }[];
    };
    expect(history.messages.filter((m) => m.role === 'user').map((m) => m.content.map((c) => c.text).join(''))).toEqual(['Show me an order form', clicked]);
    await page.screenshot({ path: join(ARTIFACTS, 'studio-a2ui.png'), fullPage: true });

    // The thread reopened by its address: its history has no activity, the call's result draws the surface again.
    expect(new URL(page.url()).hash).toBe(`#/chat/${encodeURIComponent(thread)}`);
    await page.reload();
    await expect.poll(() => page.locator('#chat-log .chat-msg.user .chat-text').allInnerTexts()).toEqual(['Show me an order form', clicked]);
    const again = page.getByRole('region', { name: 'A2UI surface order-form-1 from call_form' });
    const againButton = again.getByRole('button', { name: 'Place the order' });
    await expect.poll(() => againButton.count()).toBe(1);
    expect(await againButton.evaluate((b) => b.tagName)).toBe('BUTTON');
    expect(await again.locator('a2ui-surface h2').innerText()).toBe('Order form');
    expect(await page.locator('#chat-log .chat-a2ui').count()).toBe(1);
    const againName = again.getByRole('textbox', { name: 'Name' });
    expect(await againName.inputValue()).toBe('Ada Lovelace');
    expect(await seriousViolations(page)).toEqual([]);
    await againName.fill('Ada King');
    await againButton.click();
    await expect.poll(() => chats.length).toBe(3);
    expect(lastUserText(chats[2])).toBe(clicked);
    await expect.poll(() => page.locator('#chat-log .chat-msg.assistant .chat-text').last().innerText()).toBe('Your order is placed again.');
    expect(offLoopback(urls)).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('draws a surface whose catalog is named by CopilotKit’s id, and its click comes back as well', async () => {
    const { page, problems, urls, chats } = await newPage();
    await page.goto(`${dev.url}/inspector/#/chat`);
    await expect.poll(() => page.locator('#chat-agent option').count()).toBe(3);
    await page.locator('#chat-agent').selectOption('kit');
    await page.getByRole('textbox', { name: 'Message' }).fill('Show me an order form');
    await page.getByRole('button', { name: 'Send' }).click();
    const surface = page.getByRole('region', { name: 'A2UI surface order-form-2 from call_form' });
    const button = surface.getByRole('button', { name: 'Place the order' });
    await expect.poll(() => button.count()).toBe(1);
    expect(await surface.getByRole('textbox', { name: 'Name' }).inputValue()).toBe('Grace Hopper');
    await expect.poll(() => page.locator('#chat-status').innerText()).toMatch(/^Run \S+ finished\.$/);
    await button.click();
    await expect.poll(() => chats.length).toBe(2);
    expect(lastUserText(chats[1])).toBe('User performed action "order.submit" on surface "order-form-2" (component: submit). Context: {"name":"Grace Hopper"}');
    await expect.poll(() => page.locator('#chat-log .chat-msg.assistant .chat-text').last().innerText()).toBe('Your order is placed.');
    expect(offLoopback(urls)).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('a surface whose catalog the page does not know says so, beside its JSON', async () => {
    const { page, problems, urls } = await newPage();
    await page.goto(`${dev.url}/inspector/#/chat`);
    await expect.poll(() => page.locator('#chat-agent option').count()).toBe(3);
    await page.locator('#chat-agent').selectOption('own');
    await page.getByRole('textbox', { name: 'Message' }).fill('Show me an order form');
    await page.getByRole('button', { name: 'Send' }).click();
    const surface = page.getByRole('region', { name: 'A2UI surface order-form-3 from call_form' });
    await expect.poll(() => surface.locator('.chat-bad').allInnerTexts()).toEqual(['Not drawn: Catalog not found: https://forms.example/catalog.json']);
    expect(await surface.locator('a2ui-surface').count()).toBe(0);
    expect(await surface.locator('details.chat-fold summary').innerText()).toBe('A2UI surface order-form-3 from call_form (JSON, 1 update)');
    await expect.poll(() => page.locator('#chat-status').innerText()).toMatch(/^Run \S+ finished\.$/);
    expect(await seriousViolations(page)).toEqual([]);
    expect(offLoopback(urls)).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });
});
