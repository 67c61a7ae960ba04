import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresBus } from '../../src/stores/postgres-bus.ts';
import { PostgresStore } from '../../src/stores/postgres.ts';
import { bodyJson, json, parseSse, readFrames, type SseFrame } from '../support/server.ts';
import { PG_URL } from '../support/postgres.ts';

/**
 * Two `awaken serve` processes on one PostgreSQL database (real processes, real sockets): a run
 * started on one is listed, followed, cancelled and decided through the other; a job held by a
 * killed instance is taken over when its lease expires.
 */

const repo = resolve(import.meta.dirname, '../..');
const prefix = `cl${process.pid}`;
const store = `${PG_URL}?prefix=${prefix}`;

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'fake', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** A fake OpenAI endpoint whose answer depends on the conversation it gets. */
let killRequests = 0;
function fakeProvider(req: IncomingMessage, res: ServerResponse): void {
  let body = '';
  req.on('data', (d: Buffer) => (body += d.toString()));
  req.on('end', () => {
    const messages = (JSON.parse(body) as { messages: { role: string; content?: unknown }[] }).messages;
    const last = messages.at(-1);
    const userText = JSON.stringify(messages.filter((m) => m.role === 'user'));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (last?.role === 'tool') {
      res.end(`${chunk({ role: 'assistant', content: 'done after the tool' })}${chunk({}, 'stop')}data: [DONE]\n\n`);
    } else if (userText.includes('slow please')) {
      res.write(chunk({ role: 'assistant', content: 'thinking' })); // and never more
    } else if (userText.includes('confirm it')) {
      res.end(
        chunk({
          role: 'assistant',
          tool_calls: [{ index: 0, id: 'call_c1', type: 'function', function: { name: 'confirm_action', arguments: '{"action":"deploy"}' } }],
        }) +
          chunk({}, 'tool_calls') +
          'data: [DONE]\n\n',
      );
    } else if (userText.includes('kill me')) {
      killRequests++;
      if (killRequests === 1) res.write(chunk({ role: 'assistant', content: 'almost' }));
      else res.end(`${chunk({ role: 'assistant', content: 'taken over' })}${chunk({}, 'stop')}data: [DONE]\n\n`);
    } else res.end(`${chunk({ role: 'assistant', content: 'ok' })}${chunk({}, 'stop')}data: [DONE]\n\n`);
  });
}

interface Instance {
  readonly child: ChildProcess;
  readonly url: string;
}

function startInstance(providerPort: number): Promise<Instance> {
  const child = spawn(
    process.execPath,
    [join(repo, 'src/cli/awaken.js'), 'serve', '--port', '0', '--store', store, '--lease-ms', '1500', '--sweep-ms', '200'],
    {
      cwd: repo,
      env: { ...process.env, OPENAI_API_KEY: 'test', OPENAI_BASE_URL: `http://127.0.0.1:${providerPort}/v1`, OPENAI_MODEL: 'fake', ANTHROPIC_API_KEY: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let log = '';
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`no start:\n${log}`)), 20_000);
    child.stderr?.on('data', (d: Buffer) => {
      log += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(log);
      if (m !== null) {
        clearTimeout(timer);
        ok({ child, url: m[1] as string });
      }
    });
    child.on('exit', (code) => fail(new Error(`exited ${code}:\n${log}`)));
  });
}

const data = (f: SseFrame) => JSON.parse(f.data) as { event_type: string; run_id?: string; termination?: { type: string }; id?: string; outcome?: string };
const post = (url: string, body: unknown) => fetch(url, json(body));

let provider: Server;
let a: Instance;
let b: Instance;
beforeAll(async () => {
  for (const s of [PostgresStore.withPrefix(PG_URL, prefix), new PostgresBus(PG_URL, { prefix })]) {
    await s.dropSchema();
    await s.close();
  }
  provider = createServer(fakeProvider);
  await new Promise<void>((r) => provider.listen(0, '127.0.0.1', () => r()));
  const port = (provider.address() as { port: number }).port;
  a = await startInstance(port);
  b = await startInstance(port);
}, 60_000);
afterAll(async () => {
  for (const i of [a, b]) i?.child.kill('SIGKILL');
  provider?.closeAllConnections();
  provider?.close();
  for (const s of [PostgresStore.withPrefix(PG_URL, prefix), new PostgresBus(PG_URL, { prefix })]) {
    await s.dropSchema().catch(() => undefined);
    await s.close();
  }
});

describe('two instances on one PostgreSQL database', () => {
  it('a run started on A is listed, followed and cancelled through B', async () => {
    const r = await post(`${a.url}/v1/runs`, { threadId: 'c1', messages: [{ role: 'user', content: 'slow please' }] });
    const runId = r.headers.get('x-awaken-run-id') as string;
    await readFrames(r, (fs) => fs.some((f) => data(f).event_type === 'text_delta'), 15_000);
    const listed = await bodyJson(fetch(`${b.url}/v1/runs?thread_id=c1`));
    expect(listed.items.map((x: { run_id: string; status: string }) => [x.run_id, x.status])).toEqual([[runId, 'running']]);
    const follow = await fetch(`${b.url}/v1/threads/c1/stream?since=0`);
    const cancel = await fetch(`${b.url}/v1/runs/${runId}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    expect(cancel.status).toBe(202);
    const seen = await readFrames(follow, (fs) => fs.some((f) => data(f).event_type === 'run_finish'), 15_000);
    expect(data(seen[0] as SseFrame)).toMatchObject({ event_type: 'run_start', run_id: runId });
    expect(seen.map((f) => Number(f.id))).toEqual(seen.map((_, i) => i + 1));
    expect(data(seen.at(-1) as SseFrame).termination?.type).toBe('cancelled');
  }, 60_000);

  it('a run suspended on A is decided through B and finishes; B sees both segments', async () => {
    const r = await post(`${a.url}/v1/runs`, { threadId: 'c2', messages: [{ role: 'user', content: 'confirm it' }] });
    const runId = r.headers.get('x-awaken-run-id') as string;
    const first = parseSse(await r.text());
    expect(data(first.at(-1) as SseFrame).termination?.type).toBe('suspended');
    const follow = await fetch(`${b.url}/v1/threads/c2/stream?since=0`);
    const decided = await post(`${b.url}/v1/runs/${runId}/decision`, { toolCallId: 'call_c1', action: 'resume', payload: { approved: true } });
    expect(decided.status).toBe(202);
    const seen = await readFrames(follow, (fs) => fs.filter((f) => data(f).event_type === 'run_finish').length === 2, 15_000);
    expect(seen.filter((f) => data(f).event_type === 'run_finish').map((f) => data(f).termination?.type)).toEqual(['suspended', 'natural_end']);
    const run = await bodyJson(fetch(`${b.url}/v1/runs/${runId}`));
    expect(run).toMatchObject({ status: 'done', termination: { type: 'natural_end' } });
  }, 60_000);

  it('one run per thread across instances: B refuses a thread A is running (409 with A’s run id)', async () => {
    const r = await post(`${a.url}/v1/runs`, { threadId: 'c5', messages: [{ role: 'user', content: 'slow please' }] });
    const runId = r.headers.get('x-awaken-run-id') as string;
    await readFrames(r, (fs) => fs.some((f) => data(f).event_type === 'text_delta'), 15_000);
    const busy = await post(`${b.url}/v1/runs`, { threadId: 'c5', messages: [{ role: 'user', content: 'me too' }] });
    expect(busy.status).toBe(409);
    expect(await bodyJson(busy)).toMatchObject({ code: 'thread_busy', run_id: runId });
    await fetch(`${b.url}/v1/runs/${runId}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } });
  }, 60_000);

  it('a thread followed on A shows the runs made on B, and then on A, on one seq', async () => {
    expect((await post(`${b.url}/v1/threads`, { id: 'c4' })).status).toBe(201);
    const watcher = fetch(`${a.url}/v1/threads/c4/stream?since=0`);
    const onB = await post(`${b.url}/v1/runs`, { threadId: 'c4', messages: [{ role: 'user', content: 'hello from b' }] });
    await onB.text();
    const onA = await post(`${a.url}/v1/runs`, { threadId: 'c4', messages: [{ role: 'user', content: 'hello from a' }] });
    await onA.text();
    const seen = await readFrames(await watcher, (fs) => fs.filter((f) => data(f).event_type === 'run_finish').length === 2, 15_000);
    expect(seen.map((f) => Number(f.id))).toEqual(seen.map((_, i) => i + 1));
    expect(seen.filter((f) => data(f).event_type === 'run_start').map((f) => data(f).run_id)).toEqual([
      onB.headers.get('x-awaken-run-id'),
      onA.headers.get('x-awaken-run-id'),
    ]);
  }, 60_000);

  it('when the instance holding a job is killed, the other finishes its work after the lease, once', async () => {
    const queued = await post(`${a.url}/v1/threads/c3/mailbox`, { messages: [{ role: 'user', content: 'kill me' }] });
    expect(queued.status).toBe(202);
    const { job_id: jobId } = await bodyJson(queued);
    let holder: string | undefined;
    for (let i = 0; i < 300 && holder === undefined; i++) {
      const jobs = await bodyJson(fetch(`${a.url}/v1/threads/c3/mailbox`));
      const job = jobs.items.find((j: { job_id: string }) => j.job_id === jobId);
      if (job?.status === 'claimed' && killRequests === 1) holder = job.claimed_by;
      else await new Promise((res) => setTimeout(res, 50));
    }
    expect(holder).toBeDefined();
    // A consumer is `<host>:<pid>:<instance id>`.
    const pid = Number(String(holder).split(':')[1]);
    const [victim, survivor] = a.child.pid === pid ? [a, b] : [b, a];
    expect(victim.child.pid).toBe(pid);
    victim.child.kill('SIGKILL');
    let job: { status: string; attempt_count: number } | undefined;
    // Until the job is accepted and no run of the thread goes on (a run taken up is acknowledged as it is taken up).
    const going = async (): Promise<boolean> =>
      ((await bodyJson(fetch(`${survivor.url}/v1/runs?thread_id=c3`))).items as { status: string }[]).some((r) => r.status !== 'done');
    for (let i = 0; i < 300 && (job?.status !== 'accepted' || (await going())); i++) {
      await new Promise((res) => setTimeout(res, 50));
      job = (await bodyJson(fetch(`${survivor.url}/v1/threads/c3/mailbox`))).items.find((j: { job_id: string }) => j.job_id === jobId);
    }
    // Done, and done once, however the two sweeps (the thread's lease, the job's claim) interleave on a
    // loaded machine: the survivor takes the job's run up (recovery `resume`, the default) and
    // acknowledges the job — claimed again at most once meanwhile, its new claim refused by the busy
    // thread — or, when the run had not answered, ends it and runs the job again.
    expect(job?.status).toBe('accepted');
    expect(job?.attempt_count).toBeLessThanOrEqual(1);
    const messages = (await bodyJson(fetch(`${survivor.url}/v1/threads/c3/messages`))).messages as { role: string; content: { text?: string }[] }[];
    expect(messages.filter((m) => m.role === 'user')).toHaveLength(1);
    expect(messages.filter((m) => m.role === 'assistant').map((m) => m.content[0]?.text)).toEqual(['taken over']);
    const runs = (await bodyJson(fetch(`${survivor.url}/v1/runs?thread_id=c3`))).items as { status: string; termination?: { type: string; value?: string } }[];
    expect(runs.filter((x) => x.termination?.type === 'natural_end')).toHaveLength(1);
    expect(runs.filter((x) => x.termination?.type !== 'natural_end').map((x) => x.termination?.value?.startsWith('interrupted: '))).not.toContain(false);
  }, 60_000);
});
