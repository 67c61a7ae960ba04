import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { slowScript } from '../chaos/chaos.ts';
import { dropPrefix, pgUrlWithPrefix } from '../support/postgres.ts';
import { startServe } from '../support/serve-process.ts';
import { parseSse, readFrames, type SseFrame } from '../support/server.ts';

/**
 * SIGTERM (issue: the server under faults → graceful shutdown): no new run, the run in flight ends
 * `cancelled` for its stream, a follower is told where to reconnect from, the process exits within
 * its bound, and its thread is free at once for the next instance (its lease released, not expired).
 */
const prefix = `sd${process.pid}`;
afterAll(async () => {
  await dropPrefix(prefix);
});
const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const data = (f: SseFrame) => JSON.parse(f.data) as { event_type?: string; termination?: { type: string }; reason?: string; reconnect?: boolean };

describe('awaken serve on SIGTERM', () => {
  it('cancels the run in flight, ends every stream, exits 0 within 15 s, and leaves the thread free', async () => {
    // Leases of a minute: a thread free at once afterwards was released, not left to expire.
    const args = ['--store', pgUrlWithPrefix(prefix), '--model', `scripted:${slowScript(40, 100)}`, '--lease-ms', '60000'];
    const s = await startServe(args);
    expect((await fetch(`${s.url}/v1/threads`, json({ id: 'sd' }))).status).toBe(201);
    const follower = fetch(`${s.url}/v1/threads/sd/stream?since=0`).then((r) => readFrames(r, () => false, 20_000));
    const run = await fetch(`${s.url}/v1/runs`, json({ threadId: 'sd', messages: [{ role: 'user', content: 'go' }] }));
    const runText = run.text();
    await new Promise((r) => setTimeout(r, 400));
    const exited = new Promise<number | null>((r) => s.child.once('exit', (code) => r(code)));
    const signalled = Date.now();
    s.child.kill('SIGTERM');
    const code = await exited;
    const took = Date.now() - signalled;
    expect(code).toBe(0);
    expect(took).toBeLessThan(15_000);
    const frames = parseSse(await runText);
    expect(data(frames.at(-1) as SseFrame)).toMatchObject({ event_type: 'run_finish', termination: { type: 'cancelled' } });
    const followed = await follower;
    const last = followed.at(-1) as SseFrame;
    expect(last.event).toBe('resync');
    expect(data(last)).toMatchObject({ reconnect: true, reason: 'shutting_down' });
    expect(followed.some((f) => data(f).event_type === 'run_finish' && data(f).termination?.type === 'cancelled')).toBe(true);
    expect(s.log()).toContain('shutting down');

    const next = await startServe(args);
    try {
      const again = await fetch(`${next.url}/v1/runs`, json({ threadId: 'sd', messages: [{ role: 'user', content: 'again' }] }));
      expect(again.status).toBe(200);
      await again.body?.cancel();
    } finally {
      await next.stop();
    }
  }, 60_000);

  it('leaves a run waiting for a decision waiting: after a restart the decision resumes it to its end', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-sd-'));
    const script = join(dir, 'ask.json');
    writeFileSync(script, JSON.stringify([{ tool_calls: [{ id: 'c', name: 'confirm_action', arguments: { action: 'ship' } }] }, { text: 'Shipped.' }]));
    const args = ['--store', `sqlite:${join(dir, 'awaken.db')}`, '--model', `scripted:${script}`];
    const s = await startServe(args);
    const run = await fetch(`${s.url}/v1/runs`, json({ threadId: 'p', messages: [{ role: 'user', content: 'ship it' }] }));
    const runId = run.headers.get('x-awaken-run-id') as string;
    expect(data(parseSse(await run.text()).at(-1) as SseFrame)).toMatchObject({ event_type: 'run_finish', termination: { type: 'suspended' } });
    const exited = new Promise<number | null>((r) => s.child.once('exit', (code) => r(code)));
    s.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(s.log()).toContain('parked run left waiting at shutdown');

    // The restarted process reads the script from its start: its first answer is the one after the call.
    writeFileSync(script, JSON.stringify([{ text: 'Shipped.' }]));
    const next = await startServe(args);
    try {
      expect(await (await fetch(`${next.url}/v1/runs/${runId}`)).json()).toMatchObject({ status: 'waiting' });
      const follower = fetch(`${next.url}/v1/threads/p/stream`).then((r) => readFrames(r, (fs) => fs.some((f) => data(f).event_type === 'run_finish'), 10_000));
      const decided = await fetch(`${next.url}/v1/runs/${runId}/decision`, json({ toolCallId: 'c', action: 'resume' }));
      expect(decided.status).toBe(202);
      const frames = (await follower).map(data);
      expect(frames.at(-1)).toMatchObject({ event_type: 'run_finish', termination: { type: 'natural_end' } });
      const messages = (await (await fetch(`${next.url}/v1/threads/p/messages`)).json()) as { messages: { role: string }[] };
      expect(messages.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    } finally {
      await next.stop();
    }
  }, 60_000);
});
