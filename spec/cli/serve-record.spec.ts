import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transcriptIdsOf } from '../../src/replay/served.ts';
import { repo, startDemoAndSlow, type ServeProcess } from '../support/serve-process.ts';

/**
 * `awaken serve --record DIR`: a transcript of every run served, replayed identical by `awaken
 * replay` — recorded through a real socket: a run with a tool call, a run on the same thread that
 * waits for an approval sent in a second request, and a run cancelled mid-stream from another
 * request. No credential reaches a transcript.
 */

const TOKEN = 'record-secret-0123456789abcdef';
const dir = mkdtempSync(join(tmpdir(), 'awaken-record-'));
let server: ServeProcess;
beforeAll(async () => {
  server = await startDemoAndSlow(['--record', dir], { AWAKEN_API_TOKEN: TOKEN });
});
afterAll(async () => {
  await server.stop();
});

const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
const post = (path: string, body: unknown): Promise<Response> => fetch(`${server.url}${path}`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
const transcriptOf = async (runId: string): Promise<string> => {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const file = readdirSync(dir).find((f) => transcriptIdsOf(f)?.runId === runId);
    if (file !== undefined) return join(dir, file);
    if (Date.now() > deadline) throw new Error(`no transcript for ${runId} in ${readdirSync(dir).join(', ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};
const runIdOf = (sse: string): string => /"event_type":"run_start","thread_id":"[^"]*","run_id":"([^"]+)"/.exec(sse)?.[1] ?? '';

describe('awaken serve --record DIR', () => {
  it('records a tool call, an approval sent in a second request and a cancel; awaken replay finds each identical', async () => {
    // 1. A run with a tool call.
    const first = await (await post('/v1/runs', { threadId: 'rec', messages: [{ role: 'user', content: 'weather in Oslo?' }] })).text();
    expect(first).toContain('"natural_end"');
    // 2. On the same thread (its history loaded from the store): a call waiting for approval, approved by another request.
    const second = await (await post('/v1/runs', { threadId: 'rec', messages: [{ role: 'user', content: 'delete the branch' }] })).text();
    expect(second).toContain('"suspended"');
    const waiting = runIdOf(second);
    expect((await post(`/v1/runs/${waiting}/decision`, { toolCallId: 'call_delete_branch', action: 'resume', payload: { approved: true } })).status).toBe(202);
    // 3. A slow run, cancelled from another request once its text has begun.
    const slow = await post('/v1/runs', { threadId: 'rec-slow', agentId: 'slow', messages: [{ role: 'user', content: 'take your time' }] });
    const reader = (slow.body as ReadableStream<Uint8Array>).getReader();
    let seen = '';
    while (!seen.includes('text_delta')) seen += new TextDecoder().decode((await reader.read()).value);
    expect((await post(`/v1/runs/${runIdOf(seen)}/cancel`, {})).status).toBe(202);
    while (!(await reader.read()).done);

    const files = [await transcriptOf(runIdOf(first)), await transcriptOf(waiting), await transcriptOf(runIdOf(seen))];
    const texts = files.map((f) => readFileSync(f, 'utf8'));
    expect(texts[1]).toMatch(/\n\{"type":"decision","after_event":\d+,/);
    expect(texts[1]).toMatch(/"history":\[\{"id":"[^"]+","role":"user"/);
    expect(texts[2]).toMatch(/\n\{"type":"cancel","after_event":\d+\}/);
    // The inference the cancel cut short is recorded as it ended.
    expect(texts[2]).toMatch(/"type":"llm".*("interrupted":true|"error":\{"code":"cancelled")/);
    for (const t of texts) expect(t).not.toContain(TOKEN);

    const replay = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), 'replay', ...files], { cwd: repo, encoding: 'utf8' });
    expect(replay.stdout).toMatch(/^identical +\d+ +\d+ +natural_end +.*--.*\.jsonl$/m);
    expect(replay.stdout).toMatch(/^identical +\d+ +\d+ +cancelled +/m);
    expect(replay.stdout).toContain('3 identical, 0 differ');
    expect(replay.status).toBe(0);
  });

  it('a run is still served when its transcript cannot be written, and the failure is logged', async () => {
    const gone = mkdtempSync(join(tmpdir(), 'awaken-record-gone-'));
    const other = await startDemoAndSlow(['--record', gone]);
    try {
      rmSync(gone, { recursive: true });
      const sse = await (
        await fetch(`${other.url}/v1/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ threadId: 't', messages: [{ role: 'user', content: 'weather in Oslo?' }] }),
        })
      ).text();
      expect(sse).toContain('"natural_end"');
      await expect.poll(() => other.log(), { timeout: 10_000 }).toContain('transcript not written');
      expect(existsSync(gone)).toBe(false);
    } finally {
      await other.stop();
    }
  });
});
