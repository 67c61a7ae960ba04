import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dropPrefix, pgUrlWithPrefix } from '../support/postgres.ts';
import { killHard, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * A scheduled call (`ToolResults.scheduled`) outlives its process: `awaken serve` is killed with
 * kill -9 after the call parked and before its time came, and the server started again is killed
 * once more before that time; the third, on the same store (SQLite, PostgreSQL), wakes it when its
 * time comes, and the call's work runs exactly once.
 */
const dirs: string[] = [];
const servers: ServeProcess[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const app = (ledger: string): string => `import { appendFileSync } from 'node:fs';
import { defineApp, defineTool, scriptedProvider, ToolResults } from 'awaken-ts';
import { z } from 'zod';

// Parks until 15 s after it is first called (two restarts fit before it, on a loaded machine too); once woken it does its work, written down outside the server.
const later = defineTool({
  id: 'later',
  description: 'Sends the report at a scheduled time',
  args: z.object({ job: z.string() }),
  execute: (args, ctx) => {
    if (ctx.resume === undefined) return ToolResults.scheduled({ id: ctx.callId, name: 'later', arguments: args }, { not_before: Date.now() + 15_000 });
    appendFileSync(${JSON.stringify(ledger)}, args.job + '\\n');
    return ToolResults.success('later', { sent: args.job });
  },
});

export default defineApp({
  agents: [{ id: 'scheduler', model: 'default', system_prompt: 'Schedule.' }],
  tools: [later],
  models: { default: { provider: 'script', model_name: 'scripted' } },
  providers: {
    script: scriptedProvider([
      { tool_calls: [{ id: 'c1', name: 'later', arguments: { job: 'report' } }] },
      { text: 'the report is out' },
    ]),
  },
});
`;

const STORES: readonly { readonly name: string; readonly store: (dir: string) => string; readonly drop?: () => Promise<void> }[] = [
  { name: 'SQLite', store: (dir) => `sqlite:${join(dir, 'awaken.db')}` },
  { name: 'PostgreSQL', store: () => pgUrlWithPrefix(`chs${process.pid}`), drop: () => dropPrefix(`chs${process.pid}`) },
];

describe('a scheduled call across kill -9', () => {
  it.each(STORES)(
    '$name: parks, two servers die one after the other before its time, and the third wakes it: the work runs once, the run ends',
    async ({ store, drop }) => {
      const dir = mkdtempSync(join(tmpdir(), 'awaken-scheduled-'));
      dirs.push(dir);
      chmodSync(dir, 0o755);
      const ledger = join(dir, 'ledger.txt');
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
      writeFileSync(join(dir, 'app.ts'), app(ledger));
      const args = ['--app', 'app.ts', '--store', store(dir)];
      try {
        const first = await startServe(args, {}, dir);
        const r = await fetch(`${first.url}/v1/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ agentId: 'scheduler', threadId: 't1', messages: [{ role: 'user', content: 'send the report at nine' }] }),
        });
        const runId = r.headers.get('x-awaken-run-id') as string;
        expect(await r.text()).toContain('"action":"schedule"');
        await killHard(first);

        // Up long enough to have looked at the store (its mailbox looks every second), then killed too.
        const second = await startServe(args, {}, dir);
        expect(((await (await fetch(`${second.url}/v1/runs/${runId}`)).json()) as { status: string }).status).toBe('waiting');
        await new Promise((resolve) => setTimeout(resolve, 1_200));
        await killHard(second);
        expect(existsSync(ledger)).toBe(false);

        const third = await startServe(args, {}, dir);
        servers.push(third);
        let status = '';
        for (let i = 0; i < 300 && status !== 'done'; i++) {
          status = ((await (await fetch(`${third.url}/v1/runs/${runId}`)).json()) as { status: string }).status;
          if (status !== 'done') await new Promise((resolve) => setTimeout(resolve, 100));
        }
        const run = (await (await fetch(`${third.url}/v1/runs/${runId}`)).json()) as { status: string; termination?: { type: string } };
        expect(run).toMatchObject({ status: 'done', termination: { type: 'natural_end' } });
        expect(readFileSync(ledger, 'utf8')).toBe('report\n');
      } finally {
        // The store's tables go only once no server uses them.
        await Promise.all(servers.splice(0).map((s) => s.stop()));
        await drop?.();
      }
    },
    120_000,
  );
});
