import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolResults } from '../../src/contract/tool.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { judgeAgUi } from '../../src/protocols/ag-ui/judge.ts';
import { judgeAiSdk } from '../../src/protocols/ai-sdk-v6/judge.ts';
import { ALICE_TOKEN, BOB_TOKEN, bodyJson, testServer, twoPrincipals } from '../support/server.ts';

/**
 * The gate outcome `Schedule` (`ToolResults.scheduled`): a call parks until a time or a trigger, the
 * client sees why, the mailbox wakes a call whose time came, and `POST /v1/runs/:id/triggers/:call_id`
 * wakes one waiting for a trigger — for the run's owner only (two principals, over a socket).
 */
const ALICE = ALICE_TOKEN;
const BOB = BOB_TOKEN;

let open: { close(): Promise<void> } | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

async function world(when: { readonly not_before?: number; readonly trigger?: boolean }) {
  const ran: unknown[] = [];
  const later = defineTool({
    id: 'later',
    description: 'Does its work at a scheduled time',
    args: z.object({ job: z.string() }),
    execute: (args, ctx) => {
      if (ctx.resume === undefined) return ToolResults.scheduled({ id: ctx.callId, name: 'later', arguments: args }, when);
      ran.push(ctx.resume.decision.result ?? null);
      return ToolResults.success('later', { done: args.job });
    },
  });
  const s = testServer([{ tool_calls: [{ id: 'c1', name: 'later', arguments: { job: 'report' } }] }, { text: 'the report is out' }], { tools: [later] });
  const { mailbox, call, close } = await twoPrincipals(s);
  open = { close };
  /** Starts a run on thread `t1` and reads its stream up to where it parks. */
  const park = async (): Promise<{ runId: string; frames: { event_type: string; [k: string]: unknown }[] }> => {
    const r = await call(ALICE, 'POST', '/v1/runs', { threadId: 't1', messages: [{ role: 'user', content: 'send the report' }] });
    const frames = (await r.text())
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)) as { event_type: string });
    return { runId: r.headers.get('x-awaken-run-id') as string, frames };
  };
  const status = async (runId: string): Promise<string> => (await bodyJson(call(ALICE, 'GET', `/v1/runs/${runId}`))).status as string;
  const settled = async (runId: string): Promise<string> => {
    for (let i = 0; i < 200 && (await status(runId)) === 'waiting'; i++) await new Promise((r) => setTimeout(r, 10));
    for (let i = 0; i < 200 && (await status(runId)) !== 'done'; i++) await new Promise((r) => setTimeout(r, 10));
    return status(runId);
  };
  return { s, mailbox, call, park, status, settled, ran };
}

describe('a scheduled call', () => {
  it('parks the run, telling the client it waits and until when; the mailbox wakes it once its time came, not before', async () => {
    const w = await world({ not_before: 1_000 });
    const { runId, frames } = await w.park();
    expect(frames.find((f) => f.event_type === 'tool_call_done')?.['result']).toEqual({
      tool_name: 'later',
      status: 'pending',
      data: null,
      message: 'scheduled: waits until 1970-01-01T00:00:01.000Z',
      suspension: {
        suspension: { id: 'schedule-c1', action: 'schedule', message: 'scheduled: waits until 1970-01-01T00:00:01.000Z', parameters: { not_before: 1000 } },
        pending: { id: 'c1', name: 'later', arguments: { job: 'report' } },
        resume_mode: 'replay_tool_call',
      },
    });
    expect(frames.at(-1)).toMatchObject({ event_type: 'run_finish', termination: { type: 'suspended' } });
    expect(await w.status(runId)).toBe('waiting');
    expect(await w.mailbox.wakeScheduled()).toEqual(['c1']);
    expect(await w.settled(runId)).toBe('done');
    expect(w.ran).toEqual([null]);
    expect(await w.mailbox.wakeScheduled()).toEqual([]);
  });

  it('is not woken before its time', async () => {
    const w = await world({ not_before: 8_000_000_000_000 });
    const { runId } = await w.park();
    expect(await w.mailbox.wakeScheduled()).toEqual([]);
    expect(await w.status(runId)).toBe('waiting');
    expect(w.ran).toEqual([]);
  });

  it('waiting for a trigger, goes on when its run’s owner triggers it, with the payload; another principal gets 404 and changes nothing', async () => {
    const w = await world({ trigger: true });
    const { runId } = await w.park();
    expect(await w.mailbox.wakeScheduled()).toEqual([]);
    const bob = await w.call(BOB, 'POST', `/v1/runs/${runId}/triggers/c1`, { payload: { by: 'bob' } });
    expect({ status: bob.status, body: await bob.json() }).toEqual({
      status: 404,
      body: { error: `run ${runId} has no call c1 waiting for a trigger`, code: 'no_trigger' },
    });
    expect(await w.status(runId)).toBe('waiting');
    expect((await w.call(ALICE, 'POST', `/v1/runs/${runId}/triggers/c2`, {})).status).toBe(404);
    const r = await w.call(ALICE, 'POST', `/v1/runs/${runId}/triggers/c1`, { payload: { by: 'alice' } });
    expect({ status: r.status, body: await r.json() }).toEqual({ status: 202, body: { status: 'triggered', run_id: runId, call_id: 'c1' } });
    expect(await w.settled(runId)).toBe('done');
    expect(w.ran).toEqual([{ by: 'alice' }]);
    expect((await w.call(ALICE, 'POST', `/v1/runs/${runId}/triggers/c1`, {})).status).toBe(404);
  });

  it("shows an AI SDK client the call waiting, and why, as a preliminary output — no approval asked — which the official library's judge accepts", async () => {
    const w = await world({ trigger: true });
    const r = await w.call(ALICE, 'POST', '/v1/ai-sdk/chat', { id: 't9', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'later' }] }] });
    const body = await r.text();
    const chunks = body
      .split('\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => JSON.parse(l.slice(6)) as { type: string });
    expect(chunks.filter((c) => c.type.startsWith('tool-output') || c.type === 'tool-approval-request')).toEqual([
      { type: 'tool-output-available', toolCallId: 'c1', output: { scheduled: 'scheduled: waits for a trigger', trigger: true }, preliminary: true },
    ]);
    expect((await judgeAiSdk(body)).findings).toEqual([]);
  });

  it("shows an AG-UI client the run interrupted for the reason schedule, which the official library's judge accepts", async () => {
    const w = await world({ trigger: true });
    const r = await w.call(ALICE, 'POST', '/v1/ag-ui/run', {
      threadId: 't8',
      runId: 'r8',
      messages: [{ id: 'u1', role: 'user', content: 'later' }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    });
    const body = await r.text();
    const finished = body
      .split('\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => JSON.parse(l.slice(6)) as { type: string })
      .find((e) => e.type === 'RUN_FINISHED');
    expect(finished).toMatchObject({
      outcome: {
        type: 'interrupt',
        interrupts: [
          { id: 'schedule-c1', reason: 'schedule', toolCallId: 'c1', message: 'scheduled: waits for a trigger', metadata: { parameters: { trigger: true } } },
        ],
      },
    });
    expect((await judgeAgUi(body)).findings).toEqual([]);
  });

  it('a call scheduled for a time is not woken by a trigger', async () => {
    const w = await world({ not_before: 8_000_000_000_000 });
    const { runId } = await w.park();
    expect((await w.call(ALICE, 'POST', `/v1/runs/${runId}/triggers/c1`, {})).status).toBe(404);
    expect(await w.status(runId)).toBe('waiting');
  });
});
