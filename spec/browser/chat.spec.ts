import { mkdirSync, mkdtempSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';
import { launchChromium, serveStatic } from '../support/browser.ts';

/**
 * A real browser (headless Chromium, from the npm package @sparticuz/chromium, driven by
 * playwright-core) on two pages served from their own origin: the AI SDK's React `useChat` and the
 * AG-UI client. They talk to a real `awaken serve` process across origins, so CORS decides: a
 * loopback page and a configured origin work; any other origin is refused. Screenshots are kept in
 * test-artifacts/browser/.
 */

const ARTIFACTS = join(repo, 'test-artifacts/browser');

let api: ServeProcess;
let browser: Browser;
const statics: Server[] = [];
/** A loopback page (allowed by default), a configured origin, and an origin nobody allowed. */
let loopback = '';
let configured = '';
let foreign = '';

beforeAll(async () => {
  const dist = mkdtempSync(join(tmpdir(), 'awaken-browser-'));
  await build({ configFile: join(repo, 'browser/vite.config.ts'), build: { outDir: dist, emptyOutDir: true }, logLevel: 'error' });
  const a = await serveStatic(dist, '127.0.0.1');
  const b = await serveStatic(dist, '127.0.0.3');
  const c = await serveStatic(dist, '127.0.0.2');
  statics.push(a.server, b.server, c.server);
  loopback = a.origin.replace('127.0.0.1', 'localhost');
  configured = b.origin;
  foreign = c.origin;
  api = await startServe(['--store', 'memory', '--model', 'scripted:fixtures/scripts/demo-conversation.yaml', '--cors-origin', configured]);
  browser = await launchChromium();
  mkdirSync(ARTIFACTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await api?.stop();
  for (const s of statics) s.close();
});

/** A page that fails the test on any console error or warning (a CORS refusal is one). */
async function open(url: string, allowErrors = false): Promise<{ page: Page; console: string[] }> {
  const page = await browser.newPage();
  const console: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') console.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => console.push(`pageerror: ${e.message}`));
  await page.goto(url);
  if (!allowErrors) expect(console).toEqual([]);
  return { page, console };
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill('#input', text);
  await page.click('#send');
}

describe('a real browser, cross-origin', () => {
  it('AI SDK useChat (React, @ai-sdk/react): three turns, the tool rendered under its name, Approve and Deny clicked', async () => {
    const thread = 'browser-usechat';
    const { page, console } = await open(`${loopback}/chat.html?api=${encodeURIComponent(api.url)}&thread=${thread}`);
    await send(page, 'weather in Oslo?');
    await page.locator('[data-tool="get_weather"][data-state="output-available"]').waitFor();
    await page.getByText('It is sunny in Oslo, 10 °C.').waitFor();

    await send(page, 'delete the branch');
    const ask = page.locator('li', { has: page.locator('[data-tool="confirm_action"][data-state="approval-requested"]') });
    await ask.getByRole('button', { name: 'Approve' }).click();
    await page.getByText('Done: the branch is deleted.').waitFor();
    await expect.poll(() => page.locator('[data-tool="confirm_action"][data-state="output-available"]').count()).toBe(1);

    await send(page, 'delete the tag');
    await page.locator('[data-tool="confirm_action"][data-state="approval-requested"]').getByRole('button', { name: 'Deny' }).click();
    await page.getByText('Understood, I left the tag alone.').waitFor();
    await expect.poll(() => page.locator('[data-tool="confirm_action"][data-state="output-denied"]').count()).toBe(1);
    // No part lost its name on resume.
    expect(await page.locator('[data-tool="tool"]').count()).toBe(0);
    expect(await page.locator('#error').count()).toBe(0);
    await page.screenshot({ path: join(ARTIFACTS, 'usechat.png'), fullPage: true });
    expect(console).toEqual([]);
    const stored = (await (await fetch(`${api.url}/v1/threads/${thread}/messages?limit=200`)).json()) as { messages: { role: string }[] };
    expect(stored.messages.filter((m) => m.role === 'user')).toHaveLength(3);
    await page.close();
  });

  it('AG-UI HttpAgent from a configured origin: interrupts approved and declined, no renamed call', async () => {
    const thread = 'browser-agui';
    const { page, console } = await open(`${configured}/agui.html?api=${encodeURIComponent(api.url)}&thread=${thread}`);
    await send(page, 'weather in Oslo?');
    await page.getByText('It is sunny in Oslo, 10 °C.').waitFor();
    await page.locator('[data-tool="get_weather"]').waitFor();

    await send(page, 'delete the branch');
    await page.locator('.interrupt[data-tool-call-id="call_delete_branch"]').getByRole('button', { name: 'Approve' }).click();
    await page.getByText('Done: the branch is deleted.').waitFor();

    await send(page, 'delete the tag');
    await page.locator('.interrupt[data-tool-call-id="call_delete_tag"]').getByRole('button', { name: 'Deny' }).click();
    await page.getByText('Understood, I left the tag alone.').waitFor();
    expect(await page.locator('.interrupt').count()).toBe(0);
    expect(await page.locator('[data-tool]').evaluateAll((els) => els.map((e) => e.getAttribute('data-tool')))).toEqual([
      'get_weather',
      'confirm_action',
      'confirm_action',
    ]);
    expect(await page.locator('#error').textContent()).toBe('');
    await page.screenshot({ path: join(ARTIFACTS, 'ag-ui.png'), fullPage: true });
    expect(console).toEqual([]);
    await page.close();
  });

  it('a page from an origin nobody allowed is refused: the browser blocks it, the server starts no run', async () => {
    const thread = 'browser-refused';
    const { page, console } = await open(`${foreign}/chat.html?api=${encodeURIComponent(api.url)}&thread=${thread}`, true);
    await send(page, 'weather in Oslo?');
    await page.locator('#error').waitFor();
    expect(await page.locator('#error').textContent()).toMatch(/Failed to fetch/);
    expect(console.some((c) => /CORS|Access-Control-Allow-Origin/.test(c))).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, 'refused.png'), fullPage: true });
    expect((await fetch(`${api.url}/v1/threads/${thread}`)).status).toBe(404);
    await page.close();
  });
});
