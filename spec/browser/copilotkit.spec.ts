import { mkdirSync, mkdtempSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page, Request } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, serveStatic } from '../support/browser.ts';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * CopilotKit's React front end (`@copilotkit/react-core@1.74.0`, its `/v2` entry, a production
 * build: browser/src/copilotkit.tsx) in headless Chromium, against `awaken serve --app
 * spec/browser/fixtures/copilotkit-app.ts` directly — `runtimeUrl` is the server's
 * `/v1/copilotkit`, no CopilotKit runtime between — from another origin. The page runs its own tool
 * (`useFrontendTool`), edits the agent's shared state while the server's tool edits it too
 * (`useAgent`), answers an interrupt with its button (`useInterrupt`), after a reload shows the
 * thread the server kept (`connect`), and lists and renames the agent's threads (`useThreads`). No request leaves loopback; the console stays free of errors
 * and warnings. A screenshot goes to test-artifacts/browser/copilotkit.png.
 */

const ARTIFACTS = join(repo, 'test-artifacts/browser');

let api: ServeProcess;
let browser: Browser;
let statics: Server;
let origin = '';

beforeAll(async () => {
  const dist = mkdtempSync(join(tmpdir(), 'awaken-copilotkit-'));
  // A production build as users ship one: Vite reads NODE_ENV (the test runner's is `test`) to pick
  // React's JSX runtime and the packages' production builds.
  const nodeEnv = process.env['NODE_ENV'];
  process.env['NODE_ENV'] = 'production';
  try {
    await build({ configFile: join(repo, 'browser/copilotkit.vite.config.ts'), build: { outDir: dist, emptyOutDir: true }, logLevel: 'error' });
  } finally {
    process.env['NODE_ENV'] = nodeEnv;
  }
  const page = await serveStatic(dist);
  statics = page.server;
  origin = page.origin.replace('127.0.0.1', 'localhost');
  api = await startServe(['--app', 'spec/browser/fixtures/copilotkit-app.ts', '--store', 'memory'], { COPILOTKIT_TELEMETRY_DISABLED: '1' });
  browser = await launchChromium();
  mkdirSync(ARTIFACTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await api?.stop();
  statics?.close();
});

/** The `connect` requests each page has in flight, and how many it has finished since it last loaded. */
const connecting = new WeakMap<Page, Set<Request>>();
const connected = new WeakMap<Page, { count: number }>();

/** The page on `thread`, with every request it makes and every console error or warning kept. */
async function open(thread: string, page?: Page): Promise<{ page: Page; requests: string[]; console: string[] }> {
  const p = page ?? (await browser.newPage({ viewport: { width: 1200, height: 1000 } }));
  const requests: string[] = [];
  const console: string[] = [];
  const inFlight = new Set<Request>();
  const done = { count: 0 };
  connecting.set(p, inFlight);
  connected.set(p, done);
  p.on('framenavigated', (f) => {
    if (f === p.mainFrame()) done.count = 0;
  });
  p.on('request', (r) => {
    requests.push(r.url());
    if (r.url().includes('/agent/kit/connect')) inFlight.add(r);
  });
  p.on('requestfinished', (r) => {
    if (inFlight.delete(r)) done.count++;
    // The page connects again once /info has added its tool: a connect counts from then on.
    else if (r.url().includes('/v1/copilotkit/info')) done.count = 0;
  });
  p.on('requestfailed', (r) => inFlight.delete(r));
  p.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') console.push(`${m.type()}: ${m.text()}`);
  });
  p.on('pageerror', (e) => console.push(`pageerror: ${e.message}`));
  await p.goto(`${origin}/copilotkit.html?api=${encodeURIComponent(api.url)}&thread=${thread}`);
  return { page: p, requests, console };
}

/**
 * Types `text` and sends it as a user does: once the chat has loaded the thread (a `connect` done
 * since the page last read /info — the script runs after the page's load event, so none may have
 * started yet, and the page connects again when /info adds a tool — and none in flight), done when
 * the message shows in the chat.
 */
async function send(page: Page, text: string): Promise<void> {
  await expect.poll(() => (connected.get(page)?.count ?? 0) > 0 && (connecting.get(page)?.size ?? 0) === 0, { timeout: 20_000 }).toBe(true);
  const input = page.locator('textarea').first();
  await input.fill(text);
  await expect.poll(() => input.inputValue()).toBe(text);
  await input.press('Enter');
  await page.getByText(text, { exact: true }).last().waitFor();
}

/** The hosts a page reached other than loopback (data: and blob: URLs are the page's own). */
function offLoopback(requests: readonly string[]): string[] {
  return requests.filter((u) => /^https?:/.test(u) && !['localhost', '127.0.0.1'].includes(new URL(u).hostname));
}

describe('CopilotKit React front end → awaken serve (no proxy)', () => {
  it('runs the page’s tool, shares state both ways, answers an interrupt, shows the kept thread after a reload, and renames it', async () => {
    const thread = 'copilotkit-page';
    const { page, requests, console } = await open(thread);

    // useFrontendTool: the model calls the page's tool, the page runs it and sends its result back.
    await send(page, 'paint the page teal');
    await page.getByText('theme: teal').waitFor();
    await page.getByText('The page is teal now.').waitFor();

    // Shared state both ways: the page adds bread; the server's tool, run next, saw it and adds milk.
    await page.getByRole('button', { name: 'Add bread here' }).click();
    await expect.poll(() => page.locator('ul.todos li').allTextContents()).toEqual(['bread']);
    await send(page, 'add milk');
    await page.getByText('Added milk.').waitFor();
    await expect.poll(() => page.locator('ul.todos li').allTextContents()).toEqual(['bread', 'milk']);

    // useInterrupt: the approval the server asks for, answered with the page's button.
    await send(page, 'delete the old branch');
    await page.locator('.interrupt').getByRole('button', { name: 'Approve' }).click();
    await page.getByText('Done: the branch is deleted.').waitFor();
    expect(await page.locator('.interrupt').count()).toBe(0);
    await page.screenshot({ path: join(ARTIFACTS, 'copilotkit.png'), fullPage: true });

    // The server kept it all: the page's result, what the tool saw, the approved call's output.
    const stored = (await (await fetch(`${api.url}/v1/threads/${thread}/messages?limit=200`)).json()) as {
      messages: { role: string; content: { type: string; text?: string }[]; tool_call_id?: string }[];
    };
    const toolText = (id: string): string | undefined => stored.messages.find((m) => m.role === 'tool' && m.tool_call_id === id)?.content[0]?.text;
    expect(JSON.parse(toolText('call_theme') ?? 'null')).toEqual({ applied: 'teal' });
    expect(JSON.parse(toolText('call_todo') ?? 'null')).toEqual({ saw: ['bread'] });
    expect(JSON.parse(toolText('call_branch') ?? 'null')).toEqual({ deleted: 'old-feature' });

    // A reload opens the same thread: `connect` brings the server's history and shared state back.
    await page.reload();
    await page.getByText('Done: the branch is deleted.').waitFor();
    await page.getByText('Added milk.').waitFor();
    await expect.poll(() => page.locator('ul.todos li').allTextContents()).toEqual(['bread', 'milk']);

    // useThreads: the agent's threads, listed and renamed through the server's thread metadata.
    const row = page.locator('ul.threads li[data-thread="copilotkit-page"]');
    await row.waitFor();
    await row.getByRole('button', { name: 'Rename' }).click();
    await expect.poll(() => row.evaluate((li) => li.firstChild?.textContent)).toBe('Groceries and branches');
    // The page shows the new name as it sends it; the server has it once that request is answered.
    const titleOnServer = async (): Promise<string | undefined> =>
      ((await (await fetch(`${api.url}/v1/threads/${thread}`)).json()) as { title?: string }).title;
    await expect.poll(titleOnServer).toBe('Groceries and branches');

    // An A2UI v0.9 surface, rendered by CopilotKit's own A2UI renderer; its button's click comes back
    // to the server as the next run's user message.
    await send(page, 'show me an order form');
    await page.getByText('The order form is on screen.').waitFor();
    await page.getByRole('button', { name: 'Place the order' }).click();
    await page.getByText('Your order is placed, Ada Lovelace.').waitFor();

    // Open Generative UI: the page's generateSandboxedUi call streams as an activity the page renders
    // in a sandboxed iframe (scripts, no same origin).
    await send(page, 'draw me a card');
    await page.getByText('Here is your card.').waitFor();
    await page.frameLocator('iframe').first().getByText('Sandboxed hello').waitFor();
    const sandbox = await page.locator('iframe').first().getAttribute('sandbox');
    expect(sandbox?.split(' ')).not.toContain('allow-same-origin');
    await page.screenshot({ path: join(ARTIFACTS, 'copilotkit-generative.png'), fullPage: true });

    const after = (await (await fetch(`${api.url}/v1/threads/${thread}/messages?limit=200`)).json()) as {
      messages: { role: string; content: { text?: string }[] }[];
    };
    const clicked = after.messages.filter((m) => m.role === 'user').at(-2)?.content[0]?.text ?? '';
    expect(clicked).toContain('order.submit');

    expect(offLoopback(requests)).toEqual([]);
    expect(requests.some((u) => u.startsWith(`${api.url}/v1/copilotkit/agent/kit/connect`))).toBe(true);
    expect(console).toEqual([]);
    await page.close();
  });
});
