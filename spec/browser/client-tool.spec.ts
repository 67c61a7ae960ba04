import { mkdtempSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, serveStatic } from '../support/browser.ts';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * The AI SDK's `useChat` in headless Chromium with a tool the page runs (browser/src/client-tool.tsx),
 * against `awaken serve --app spec/browser/fixtures/client-tool-app.ts` from another origin: the
 * model calls `get_location`, which the app declares without `execute`; the page's `onToolCall`
 * answers with `addToolOutput`, `useChat` sends it back by itself, and the run goes on with it.
 */

let api: ServeProcess;
let browser: Browser;
let statics: Server;
let origin = '';

beforeAll(async () => {
  const dist = mkdtempSync(join(tmpdir(), 'awaken-client-tool-'));
  await build({ configFile: join(repo, 'browser/vite.config.ts'), build: { outDir: dist, emptyOutDir: true }, logLevel: 'error' });
  const page = await serveStatic(dist);
  statics = page.server;
  origin = page.origin.replace('127.0.0.1', 'localhost');
  api = await startServe(['--app', 'spec/browser/fixtures/client-tool-app.ts', '--store', 'memory']);
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await api?.stop();
  statics?.close();
});

describe('useChat with a tool the page runs', () => {
  it('onToolCall answers with addToolOutput, useChat sends it back, and the model reads it', async () => {
    const thread = 'usechat-client-tool';
    const page = await browser.newPage();
    const console: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') console.push(`${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => console.push(`pageerror: ${e.message}`));
    await page.goto(`${origin}/client-tool.html?api=${encodeURIComponent(api.url)}&thread=${thread}`);
    await page.fill('#input', 'where am I?');
    await page.click('#send');
    await page.getByText('You are in Bergen.').waitFor();
    expect(await page.locator('#asked').textContent()).toBe('asked 1');
    expect(await page.locator('[data-tool="get_location"]').getAttribute('data-state')).toBe('output-available');
    await expect.poll(() => page.locator('#status').textContent()).toBe('ready');
    expect(await page.locator('#error').count()).toBe(0);
    expect(console).toEqual([]);

    const stored = (await (await fetch(`${api.url}/v1/threads/${thread}/messages?limit=200`)).json()) as {
      messages: { role: string; content: { text?: string }[]; tool_call_id?: string }[];
    };
    const result = stored.messages.find((m) => m.role === 'tool' && m.tool_call_id === 'call_where');
    expect(JSON.parse(result?.content[0]?.text ?? 'null')).toEqual({ city: 'Bergen' });
    expect(stored.messages.filter((m) => m.role === 'user')).toHaveLength(1);
    await page.close();
  });
});
