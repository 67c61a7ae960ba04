import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * The inspector page's files over a real socket (`awaken serve`): a path that is not valid
 * percent-encoding (a lone `%`, `%zz`, a cut UTF-8 sequence, an overlong one, a byte that starts no
 * character) is a client's mistake — a 400 in JSON naming the path — never a 500; a valid one is
 * served or a 404 as before.
 */
let server: ServeProcess;
beforeAll(async () => {
  const assets = mkdtempSync(join(tmpdir(), 'awaken-inspector-page-'));
  mkdirSync(join(assets, 'assets'));
  writeFileSync(join(assets, 'index.html'), '<!doctype html><title>inspector</title>');
  writeFileSync(join(assets, 'assets/app.js'), 'export {};');
  server = await startServe(['--store', 'memory'], { AWAKEN_INSPECTOR_ASSETS: assets });
});
afterAll(async () => {
  await server.stop();
});

describe('GET /inspector/<path>', () => {
  it.each(['%', '%zz', '%E0%A4%A', '%c0%ae', '%ff', 'assets/%', 'a%2'])('%s: 400 JSON naming the path, never a 500', async (path) => {
    const r = await fetch(`${server.url}/inspector/${path}`);
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await r.json()).toEqual({ error: 'the path is not valid percent-encoded UTF-8', code: 'invalid_path', field: 'path' });
  });

  it('a valid path is still served, or a 404 when it is not one of the page’s files', async () => {
    expect((await fetch(`${server.url}/inspector/assets/app.js`)).status).toBe(200);
    expect((await fetch(`${server.url}/inspector/%61ssets/app.js`)).status).toBe(200);
    expect((await fetch(`${server.url}/inspector/..%2f..%2fpackage.json`)).status).toBe(404);
    expect((await fetch(`${server.url}/inspector/%e2%82%ac.js`)).status).toBe(404);
  });
});
