import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.ts';
import { repo } from '../support/serve-process.ts';

/**
 * The README's way to open the `useChat` demo page, run as written: `awaken serve` on the conversation
 * script in one process, `npx vite browser` in another, then the page at the URL the README gives,
 * in headless Chromium, holding the README's conversation. What is normalised: the ports (both
 * servers get a free one instead of 3000 and 5173, and the page is pointed at the server with the
 * `?api=` the README documents), and `npx awaken` runs the sources (`node src/cli/awaken.js`).
 */
const readme = readFileSync(join(repo, 'README.md'), 'utf8');
const section = /The `useChat` page above is a demo you can open[\s\S]*?```sh\n([\s\S]*?)```\n\n([\s\S]*?)\n\n/.exec(readme);
const commands = (section?.[1] ?? '').split('\n').filter((l) => l.trim() !== '');

const freePort = (): Promise<number> =>
  new Promise((resolvePort) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolvePort(port));
    });
  });

interface Started {
  readonly child: ChildProcess;
  output(): string;
}

/** A README command as a process (its stdout and stderr as one terminal shows them). */
function start(command: string): Started {
  // Its own process group: `npx` starts Vite as a child, and stopping stops both.
  const child = spawn('bash', ['-c', `exec ${command} 2>&1`], {
    cwd: repo,
    env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' },
    stdio: ['ignore', 'pipe', 'ignore'],
    detached: true,
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  return { child, output: () => out };
}

/** Waits until `probe` gives a value (bounded), polling every 250 ms. */
async function until<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what} did not come within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function stop(p: Started | undefined): Promise<void> {
  if (p === undefined || p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise<void>((r) => p.child.once('exit', () => r()));
  process.kill(-(p.child.pid as number), 'SIGTERM');
  await exited;
}

let api: Started | undefined;
let vite: Started | undefined;
let apiUrl = '';
let viteUrl = '';
let browser: Browser;

beforeAll(async () => {
  if (commands.join('\n') !== 'npx awaken serve --model scripted:fixtures/scripts/demo-conversation.yaml\nnpx vite browser')
    throw new Error(`the README's commands changed: ${commands.join(' / ')}`);
  api = start(`${commands[0]?.replace('npx awaken', `${process.execPath} ${join(repo, 'src/cli/awaken.js')}`)} --port 0`);
  apiUrl = await until(() => /listening on (http:\/\/\S+)/.exec(api?.output() ?? '')?.[1], 'awaken serve', 30_000);
  const port = await freePort();
  vite = start(`${commands[1]} --port ${port} --strictPort`);
  viteUrl = `http://localhost:${port}`;
  // Vite's dev server answers once it listens (it prints nothing at its log level).
  await until(async () => ((await fetch(`${viteUrl}/chat.html`).catch(() => undefined))?.status === 200 ? true : undefined), 'npx vite browser', 60_000);
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await stop(vite);
  await stop(api);
});

describe('README: opening the useChat demo page', () => {
  it('names the page at Vite’s default port and the ?api= that points it at another server', () => {
    expect(section?.[0]).toContain('open\n`http://localhost:5173/chat.html`');
    expect(section?.[2]).toContain('`chat.html?api=http://127.0.0.1:8080` names another\nserver');
  });

  it('the page the README names holds its conversation with the server the README starts', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (m) => (m.type() === 'error' || m.type() === 'warning' ? problems.push(`${m.type()}: ${m.text()}`) : undefined));
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    await page.goto(`${viteUrl}/chat.html?api=${encodeURIComponent(apiUrl)}`);
    await page.fill('#input', 'weather in Oslo?');
    await page.click('#send');
    await page.getByText('It is sunny in Oslo, 10 °C.').waitFor();
    await page.fill('#input', 'delete the branch');
    await page.click('#send');
    await page
      .locator('li', { has: page.locator('[data-tool="confirm_action"][data-state="approval-requested"]') })
      .getByRole('button', { name: 'Approve' })
      .click();
    await page.getByText('Done: the branch is deleted.').waitFor();
    expect(problems).toEqual([]);
    await page.close();
    // "It prints only warnings": nothing, on a healthy start.
    expect(vite?.output()).toBe('');
  });
});
