import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * docs/plugins/state-machine.md → "Try it", done as a newcomer does it: its awaken.yaml (the seed's
 * machine as it is) written to a file, `awaken serve --config awaken.yaml --model
 * scripted:fixtures/scripts/read-before-write.yaml`, a run posted over a real socket, and the
 * stream read: the Write before the Read refused with the configured reason.
 */

const doc = readFileSync(join(repo, 'docs/plugins/state-machine.md'), 'utf8');
let server: ServeProcess;
beforeAll(async () => {
  const yaml = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1] as string;
  const file = join(mkdtempSync(join(tmpdir(), 'awaken-fsm-')), 'awaken.yaml');
  writeFileSync(file, `server:\n  store: memory\n${yaml}`);
  server = await startServe(['--config', file, '--model', 'scripted:fixtures/scripts/read-before-write.yaml']);
});
afterAll(async () => {
  await server.stop();
});

describe('the state machine in awaken serve (docs/plugins/state-machine.md)', () => {
  it('refuses the Write before the Read with the configured reason; the rest of the run proceeds and ends naturally', async () => {
    const body = /curl -N localhost:3000\/v1\/runs -H 'content-type: application\/json' \\\n\s+-d '([^']+)'/.exec(doc)?.[1] as string;
    const sse = await (await fetch(`${server.url}/v1/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).text();
    const done = sse
      .split('\n')
      .filter((l) => l.startsWith('data: ') && l.includes('"tool_call_done"'))
      .map((l) => JSON.parse(l.slice(6)) as { id: string; result: { status: string; message: string | null } });
    expect(done.map((d) => [d.id, d.result.status])).toEqual([
      ['call_write_1', 'error'],
      ['call_read', 'success'],
      ['call_write_2', 'success'],
    ]);
    expect(done[0]?.result.message).toBe('Read src/a.rs before writing.');
    expect(sse).toContain('"natural_end"');
    expect(((await (await fetch(`${server.url}/v1/capabilities`)).json()) as { plugins: string[] }).plugins).toEqual(
      expect.arrayContaining(['permission', 'reminder', 'state_machine']),
    );
  });
});
