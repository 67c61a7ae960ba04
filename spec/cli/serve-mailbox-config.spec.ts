import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * The `mailbox:` section of `awaken serve --config` (book: MailboxConfig; docs/server.md), through a
 * real process: a queued run that waits for a decision keeps its job's lease for
 * `suspended_lease_ms`, renewed every `lease_renewal_interval_ms` — read from the job as the mailbox
 * route lists it.
 */
const dirs: string[] = [];
const servers: ServeProcess[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('awaken serve: the mailbox section', () => {
  it('a queued run waiting for a decision holds its job for suspended_lease_ms', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-mailbox-config-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'awaken.yaml'), 'mailbox:\n  suspended_lease_ms: 777777\n  lease_renewal_interval_ms: 50\n');
    const server = await startServe(
      ['--config', 'awaken.yaml', '--store', 'memory', '--model', `scripted:${join(repo, 'fixtures/scripts/demo-confirm.json')}`],
      {},
      dir,
    );
    servers.push(server);
    const post = (path: string, body: unknown) =>
      fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post('/v1/threads', { id: 'm1' })).status).toBe(201);
    expect((await post('/v1/threads/m1/messages', { messages: [{ role: 'user', content: 'delete the branch' }] })).status).toBe(202);
    let job: { status: string; lease_until?: number; updated_at: number } | undefined;
    for (let i = 0; i < 200; i++) {
      const listed = (await (await fetch(`${server.url}/v1/threads/m1/mailbox`)).json()) as { items: (typeof job)[] };
      job = listed.items[0];
      const run = (await (await fetch(`${server.url}/v1/runs?thread_id=m1`)).json()) as { items: { status: string }[] };
      if (run.items[0]?.status === 'waiting' && job?.lease_until !== undefined && job.lease_until - job.updated_at === 777777) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(job?.status).toBe('claimed');
    expect((job?.lease_until ?? 0) - (job?.updated_at ?? 0)).toBe(777777);
  }, 60_000);

  it('refuses a key the mailbox does not have, naming it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-mailbox-config-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'awaken.yaml'), 'mailbox:\n  lease_seconds: 30\n');
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), 'serve', '--config', 'awaken.yaml', '--store', 'memory', '--port', '0'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect({ code: r.status, err: r.stderr }).toEqual({ code: 65, err: 'awaken serve: awaken.yaml: mailbox.lease_seconds: unknown field\n' });
    expect(readFileSync(join(repo, 'docs/server.md'), 'utf8')).toContain('suspended_lease_ms: 600000');
  }, 60_000);

  it('refuses settings that cannot work together, naming the key the file set, before it opens anything', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-mailbox-config-'));
    dirs.push(dir);
    const { spawnSync } = await import('node:child_process');
    const refusal = (yaml: string): { code: number | null; err: string } => {
      writeFileSync(join(dir, 'awaken.yaml'), yaml);
      const r = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), 'serve', '--config', 'awaken.yaml', '--port', '0'], {
        cwd: dir,
        encoding: 'utf8',
        timeout: 60_000,
      });
      return { code: r.status, err: r.stderr };
    };
    expect(refusal('mailbox:\n  lease_ms: 5000\n')).toEqual({
      code: 65,
      err: 'awaken serve: awaken.yaml: mailbox.lease_ms: a lease is renewed every 10000 ms but lasts 5000 ms (lease_ms): it would lapse between its renewals\n',
    });
    expect(refusal('mailbox:\n  lease_renewal_interval_ms: 700000\n')).toEqual({
      code: 65,
      err: 'awaken serve: awaken.yaml: mailbox.lease_renewal_interval_ms: a lease is renewed every 700000 ms but lasts 30000 ms (lease_ms): it would lapse between its renewals\n',
    });
    expect(refusal('mailbox:\n  max_retry_delay_ms: 100\n')).toEqual({
      code: 65,
      err: 'awaken serve: awaken.yaml: mailbox.max_retry_delay_ms: the first retry waits 250 ms, longer than any retry may (100 ms)\n',
    });
    // Nothing was opened: the default store's folder was not made.
    expect(existsSync(join(dir, 'data'))).toBe(false);
  }, 60_000);

  it('property: whatever --lease-ms says, the settings it derives work together (a config file can still clash)', async () => {
    const fc = (await import('fast-check')).default;
    const { mailboxConfigOf } = await import('../../src/cli/serve-command.ts');
    const { mailboxConfigProblem } = await import('../../src/core/mailbox/job.ts');
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000_000 }), (leaseMs) => {
        expect(mailboxConfigProblem(mailboxConfigOf({ leaseMs }))).toBeUndefined();
      }),
    );
  });
});
