import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.ts';
import { besideProject, listeningUrl, packedProject } from '../support/packed-setup.ts';

/**
 * The studio as a user gets it: the packed package installed into a fresh project
 * (spec/support/packed-setup.ts), its own `awaken serve --record runs` serving the page it was built
 * with (`dist/inspector-page` of the installed package, nothing pointed elsewhere), and headless
 * Chromium chatting with the agent through the page's chat panel, then opening the run's timeline.
 */
const repo = resolve(import.meta.dirname, '../..');
let project = '';
let child: ChildProcess | undefined;
let url = '';
let browser: Browser;

beforeAll(async () => {
  const packed = await packedProject();
  project = besideProject(packed, 'studio');
  writeFileSync(join(project, 'weather.yaml'), readFileSync(join(repo, 'fixtures/scripts/demo-weather.yaml'), 'utf8'));
  const bin = join(project, 'node_modules/.bin/awaken');
  const started = spawn(bin, ['serve', '--store', 'memory', '--model', 'scripted:weather.yaml', '--record', 'runs', '--port', '0'], {
    cwd: project,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, AWAKEN_INSPECTOR_ASSETS: '' },
  });
  child = started;
  url = await listeningUrl(started, 20_000);
  browser = await launchChromium();
}, 900_000);

afterAll(async () => {
  await browser?.close();
  if (child !== undefined && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child?.once('exit', r));
  }
});

describe('the studio from the installed package', () => {
  it('chats with the agent through the panel, and the run it recorded opens as a timeline', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const problems: string[] = [];
    const scripts: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('response', (r) => {
      if (r.request().resourceType() === 'script') scripts.push(`${r.status()} ${new URL(r.url()).pathname}`);
    });
    await page.goto(`${url}/inspector/#/chat`);
    await page.getByRole('textbox', { name: 'Message' }).fill('weather in Tokyo?');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => page.locator('#chat-log .chat-msg.assistant .chat-text').allInnerTexts(), { timeout: 15_000 }).toEqual(['It is cloudy in Tokyo.']);
    expect(await page.locator('#chat-log section.chat-tool h4').first().innerText()).toMatch(/^get_weather \[call_1\]/);
    // The page's script is the installed package's build.
    expect(scripts).toHaveLength(1);
    expect(scripts[0]).toMatch(/^200 \/inspector\/assets\/[\w-]+\.js$/);
    await expect.poll(() => page.locator('#chat-status').innerText()).toMatch(/^Run \S+ finished\.$/);
    const runId = /^Run (\S+) finished\.$/.exec(await page.locator('#chat-status').innerText())?.[1] as string;
    await expect.poll(() => readdirSync(join(project, 'runs')).filter((f) => f.includes(runId.replaceAll('-', '~2d')))).toHaveLength(1);
    await page.getByRole('link', { name: `Timeline of run ${runId}` }).click();
    await expect.poll(() => page.locator('#run [data-termination]').first().getAttribute('data-termination')).toBe('natural_end');
    expect(await page.locator('#run dl.summary').first().innerText()).toContain('Answer\nIt is cloudy in Tokyo.');
    expect(problems).toEqual([]);
    await page.close();
  });
});
