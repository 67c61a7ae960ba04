import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit.ts';
import { repo, startServe } from '../support/serve-process.ts';

/** `awaken serve` with API tokens, and its refusal to expose an open server (issue: the server under faults, finding 5). */
const bin = join(repo, 'src/cli/awaken.js');
const serve = (args: readonly string[], env: NodeJS.ProcessEnv = {}) => {
  const r = spawnSync(process.execPath, [bin, 'serve', '--store', 'memory', '--port', '0', ...args], {
    cwd: repo,
    encoding: 'utf8',
    env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '', AWAKEN_API_TOKEN: '', ...env },
    timeout: 30_000,
  });
  return { code: r.status, err: r.stderr };
};

describe('awaken serve and API tokens', () => {
  it('refuses to bind a non-loopback address without a token (exit 64, one line), unless --insecure', async () => {
    expect(serve(['--host', '0.0.0.0'])).toEqual({
      code: EXIT.usage,
      err: 'awaken serve: refusing to bind 0.0.0.0 without API tokens: anyone reaching it could read and drive every thread; set AWAKEN_API_TOKEN (or server.auth.tokens), or pass --insecure; see awaken serve --help\n',
    });
    const open = await startServe(['--host', '0.0.0.0', '--insecure', '--store', 'memory'], { AWAKEN_API_TOKEN: '' });
    try {
      expect((await fetch(`${open.url}/v1/threads`)).status).toBe(200);
    } finally {
      await open.stop();
    }
  }, 60_000);

  it('with tokens (AWAKEN_API_TOKEN and server.auth.tokens): 401 without one, each token its principal, no token in the log', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-auth-'));
    const config = join(dir, 'awaken.yaml');
    writeFileSync(config, 'server:\n  store: memory\n  auth:\n    tokens:\n      - { principal: alice, token_env: ALICE_SECRET }\n');
    const s = await startServe(['--host', '0.0.0.0', '--config', config], {
      AWAKEN_API_TOKEN: 'default-token-012345',
      ALICE_SECRET: 'alice-secret-0123456789',
    });
    try {
      const as = (token?: string): RequestInit => (token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
      expect((await fetch(`${s.url}/v1/threads`, as())).status).toBe(401);
      expect((await fetch(`${s.url}/health`)).status).toBe(200);
      const run = await fetch(`${s.url}/v1/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer alice-secret-0123456789' },
        body: JSON.stringify({ threadId: 'mine', messages: [{ role: 'user', content: 'weather?' }] }),
      });
      expect(run.status).toBe(200);
      await run.text();
      const items = async (token: string) => ((await (await fetch(`${s.url}/v1/threads`, as(token))).json()) as { items: { id: string }[] }).items;
      expect((await items('alice-secret-0123456789')).map((t) => t.id)).toEqual(['mine']);
      expect(await items('default-token-012345')).toEqual([]);
      expect((await fetch(`${s.url}/v1/threads/mine`, as('default-token-012345'))).status).toBe(404);
      expect(s.log()).toContain('2 API token(s)');
      expect(s.log()).not.toContain('alice-secret-0123456789');
      expect(s.log()).not.toContain('default-token-012345');
    } finally {
      await s.stop();
    }
    writeFileSync(config, 'server:\n  auth:\n    tokens:\n      - { principal: bob, token_env: BOB_SECRET }\n');
    expect(serve(['--config', config], { BOB_SECRET: '' })).toEqual({
      code: EXIT.data,
      err: `awaken serve: ${config}: server.auth.tokens[0].token_env: BOB_SECRET is not set\n`,
    });
  }, 60_000);
});
