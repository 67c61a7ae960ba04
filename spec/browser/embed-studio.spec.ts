import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.ts';
import { BASE, inExpress, TOKENS, type Hosted } from '../support/embedded.ts';

/**
 * The studio of an embedded awaken in a real browser (headless Chromium, web security on): the page
 * as the package builds it (`npm run build`: dist/inspector-page), served at `/api/awaken/inspector/`
 * by an Express app. It reads the mount path the server names and calls the API under it — every
 * request it makes is under the mount — asks for a token, and shows the caller's threads only.
 */

let h: Hosted;
let browser: Browser;
beforeAll(async () => {
  h = await inExpress({ parsed: true });
  const create = (token: string, id: string) =>
    fetch(`${h.url}/v1/threads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id }),
    });
  await create(TOKENS.alice, 'alice-desk');
  await create(TOKENS.bob, 'bob-desk');
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await h?.stop();
});

describe('the studio under the mount path', () => {
  it('asks for a token, then lists alice’s threads through the mounted API, every request under the mount', async () => {
    const page = await browser.newPage();
    const paths: string[] = [];
    const problems: string[] = [];
    page.on('request', (r) => paths.push(new URL(r.url()).pathname));
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(`${h.url}/inspector`);
    expect(new URL(page.url()).pathname).toBe(`${BASE}/inspector/`);
    await expect.poll(() => page.locator('#status').innerText()).toContain('needs an API token');
    await page.getByLabel('API token').fill(TOKENS.alice);
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.getByRole('button', { name: /^alice-desk/ }).waitFor();
    expect(await page.getByRole('button', { name: /^bob-desk/ }).count()).toBe(0);
    expect(paths).toEqual(expect.arrayContaining([`${BASE}/v1/inspector/threads`, `${BASE}/v1/capabilities`]));
    expect(paths.filter((p) => !p.startsWith(`${BASE}/`))).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });
});
