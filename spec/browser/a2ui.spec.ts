import { createReadStream, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import type { Browser } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';
import { launchChromium } from '../support/browser.ts';

/**
 * A2UI in a real browser (docs/plugins/generative-ui.md → Try it): the doc's awaken.yaml in a real
 * `awaken serve`, and browser/a2ui.html — the AG-UI client, with each `a2ui` activity's messages
 * rendered by the published A2UI v0.8 renderer (`@a2ui/lit`) — in headless Chromium from another
 * origin. The surface the agent drew is on the page: its heading, its bound text field holding the
 * data model's value, its button. The screenshot is kept in test-artifacts/browser/a2ui.png.
 */

const ARTIFACTS = join(repo, 'test-artifacts/browser');
const TYPES: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };
let api: ServeProcess;
let browser: Browser;
let statics: Server;
let origin = '';

beforeAll(async () => {
  const dist = mkdtempSync(join(tmpdir(), 'awaken-a2ui-'));
  // A production build, as a user ships it (Lit warns of its dev mode otherwise).
  await build({
    configFile: join(repo, 'browser/vite.config.ts'),
    mode: 'production',
    resolve: { conditions: ['module', 'browser', 'production'] },
    build: { outDir: dist, emptyOutDir: true },
    logLevel: 'error',
  });
  statics = createServer((req, res) => {
    const path = normalize(join(dist, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)));
    if (!path.startsWith(dist) || !existsSync(path)) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'application/octet-stream' });
    createReadStream(path).pipe(res);
  });
  await new Promise<void>((r) => statics.listen(0, '127.0.0.1', () => r()));
  origin = `http://localhost:${(statics.address() as { port: number }).port}`;
  const doc = readFileSync(join(repo, 'docs/plugins/generative-ui.md'), 'utf8');
  const yaml = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1] as string;
  const config = join(mkdtempSync(join(tmpdir(), 'awaken-a2ui-config-')), 'awaken.yaml');
  writeFileSync(config, `server:\n  store: memory\n${yaml.replace('file: fixtures/', `file: ${repo}/fixtures/`)}`);
  api = await startServe(['--config', config]);
  browser = await launchChromium();
  mkdirSync(ARTIFACTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await api?.stop();
  statics?.close();
});

describe('A2UI surfaces rendered by @a2ui/lit in a real browser', () => {
  it('the surface render_a2ui drew is on the page: heading, bound field with the data model’s value, button; no console error', async () => {
    const page = await browser.newPage();
    const console: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') console.push(`${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => console.push(`pageerror: ${e.message}`));
    await page.goto(`${origin}/a2ui.html?api=${encodeURIComponent(api.url)}&thread=a2ui-browser`);
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('#status', { hasText: 'done' }).waitFor({ timeout: 20_000 });
    // Playwright's locators go through the renderer's shadow roots.
    const surface = page.locator('a2ui-surface[data-surface-id="order-form-1"]');
    await surface.getByText('Order form').waitFor({ timeout: 10_000 });
    await expect.poll(() => surface.locator('input').first().inputValue()).toBe('Ada Lovelace');
    expect(await surface.getByText('Place the order').count()).toBeGreaterThan(0);
    expect(await surface.locator('button').count()).toBeGreaterThan(0);
    await page.screenshot({ path: join(ARTIFACTS, 'a2ui.png'), fullPage: true });
    expect(await page.locator('#error').textContent()).toBe('');
    expect(console).toEqual([]);
    await page.close();
  });
});
