import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { judgeAgUi } from '../../src/protocols/ag-ui/judge.ts';
import { judgeAiSdk } from '../../src/protocols/ai-sdk-v6/judge.ts';
import { judgeA2a } from '../../src/protocols/a2a/judge.ts';
import { approvalTool } from '../support/runtime.ts';
import { ALICE_TOKEN, BOB_TOKEN, bodyJson, laterTool, readFor, testServer, twoPrincipals } from '../support/server.ts';

/** An A2A stream read up to its `<task>:scheduled` status: what came so far, and the task's id (the first frame's). */
async function untilScheduled(r: Response): Promise<{ head: string; taskId: string }> {
  const reader = (r.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let head = '';
  while (!head.includes(':scheduled"')) {
    const next = await reader.read();
    if (next.done) break;
    head += decoder.decode(next.value, { stream: true });
  }
  reader.releaseLock();
  return { head, taskId: (JSON.parse(head.split('\n')[0]?.slice(6) ?? '{}') as { task: { id: string } }).task.id };
}

/** The task states of an A2A stream's status updates, in order. */
const statesOf = (text: string): string[] =>
  text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .flatMap((l) => {
      const f = JSON.parse(l.slice(6)) as { statusUpdate?: { status: { state: string } } };
      return f.statusUpdate !== undefined ? [f.statusUpdate.status.state] : [];
    });

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

/** `withApproval`: the model also calls `approve`, a call that waits for a person's decision. */
async function world(when: { readonly not_before?: number; readonly trigger?: boolean }, withApproval = false) {
  const ran: unknown[] = [];
  const later = laterTool(when, ran);
  const calls = [
    { id: 'c1', name: 'later', arguments: { job: 'report' } },
    ...(withApproval ? [{ id: 'c2', name: 'approve', arguments: { what: 'pay' } }] : []),
  ];
  const s = testServer([{ tool_calls: calls }, { text: 'the report is out' }], { tools: withApproval ? [later, approvalTool] : [later] });
  const { mailbox, call, close, url } = await twoPrincipals(s);
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
  return { s, mailbox, call, park, status, settled, ran, url };
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
    // Reloaded from the server, the chat shows the same wait; sent back with the next request, it wakes nothing.
    const history = await bodyJson(w.call(ALICE, 'GET', '/v1/ai-sdk/threads/t9/messages'));
    expect(history.at(-1).parts).toEqual([
      {
        type: 'tool-later',
        toolCallId: 'c1',
        input: { job: 'report' },
        state: 'output-available',
        output: { scheduled: 'scheduled: waits for a trigger', trigger: true },
        preliminary: true,
      },
    ]);
    const again = await w.call(ALICE, 'POST', '/v1/ai-sdk/chat', {
      id: 't9',
      messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'later' }] }, ...history.slice(1)],
    });
    await again.text();
    expect(w.ran).toEqual([]);
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

  it('refuses a client’s resume of a scheduled call at POST /v1/runs/:id/decision (409 naming the call); its owner may cancel it', async () => {
    const w = await world({ not_before: 8_000_000_000_000 });
    const { runId } = await w.park();
    const early = await w.call(ALICE, 'POST', `/v1/runs/${runId}/decision`, { toolCallId: 'c1', action: 'resume', payload: { now: true } });
    expect({ status: early.status, body: await early.json() }).toEqual({
      status: 409,
      body: {
        error:
          'toolCallId: the call c1 is scheduled (scheduled: waits until 2223-07-06T14:13:20.000Z): its time or its trigger wakes it, a decision may only cancel it',
        code: 'call_scheduled',
        field: 'toolCallId',
      },
    });
    expect(await w.status(runId)).toBe('waiting');
    const cancel = await w.call(ALICE, 'POST', `/v1/runs/${runId}/decision`, { toolCallId: 'c1', action: 'cancel' });
    expect(cancel.status).toBe(202);
    expect(await w.settled(runId)).toBe('done');
    expect(w.ran).toEqual([]);
  });

  it('shows an A2A client a task still working while its call is scheduled — GetTask says so, a reply is refused — and streams on to the end once triggered, judged by the official library', async () => {
    const w = await world({ trigger: true });
    const r = await w.call(ALICE, 'POST', '/v1/a2a/message:stream', {
      message: { messageId: 'm1', contextId: 'ctx-s', role: 'ROLE_USER', parts: [{ text: 'later' }] },
    });
    const { head, taskId } = await untilScheduled(r);
    const scheduled = {
      messageId: `${taskId}:scheduled`,
      contextId: 'ctx-s',
      taskId,
      role: 'ROLE_AGENT',
      parts: [
        { text: 'The tool call later is scheduled (scheduled: waits for a trigger): it goes on by itself, nothing needs an answer.' },
        {
          data: {
            scheduledToolCalls: [
              {
                toolCallId: 'c1',
                name: 'later',
                arguments: { job: 'report' },
                disposition: 'pending_builtin',
                suspensionId: 'schedule-c1',
                action: 'schedule',
                message: 'scheduled: waits for a trigger',
                schedule: { trigger: true },
              },
            ],
          },
          mediaType: 'application/json',
        },
      ],
    };
    const task = await bodyJson(w.call(ALICE, 'GET', `/v1/a2a/tasks/${taskId}`));
    expect(task.status).toEqual({ state: 'TASK_STATE_WORKING', message: scheduled });
    const reply = await w.call(ALICE, 'POST', '/v1/a2a/message:send', {
      message: { messageId: 'm2', contextId: 'ctx-s', taskId, role: 'ROLE_USER', parts: [{ data: { approved: true } }] },
    });
    expect((await bodyJson(reply)).error.message).toBe(`task ${taskId} is not waiting for input: its calls are scheduled and go on by themselves`);
    expect(w.ran).toEqual([]);
    expect((await w.call(ALICE, 'POST', `/v1/runs/${taskId}/triggers/c1`, { payload: { go: true } })).status).toBe(202);
    const rest = await readFor(r, 10_000);
    expect(rest.ended).toBe(true);
    const body = head + rest.text;
    const frames = body
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)) as { statusUpdate?: { status: { state: string; message?: unknown } } });
    const states = frames.flatMap((f) => (f.statusUpdate !== undefined ? [f.statusUpdate.status.state] : []));
    expect(states.at(-1)).toBe('TASK_STATE_COMPLETED');
    expect(states).not.toContain('TASK_STATE_INPUT_REQUIRED');
    expect(frames.some((f) => JSON.stringify(f.statusUpdate?.status.message) === JSON.stringify(scheduled))).toBe(true);
    expect(w.ran).toEqual([{ go: true }]);
    expect((await judgeA2a(body)).findings).toEqual([]);
  });

  it('answers an MCP tools/call at once that the run waits on its scheduled call and goes on by itself; the mailbox wakes it and the run ends', async () => {
    const w = await world({ not_before: 1_000 });
    const client = new Client({ name: 'awaken-spec', version: '0.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${w.url}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${ALICE}` } } }));
    try {
      const progress: Progress[] = [];
      const result = await client.callTool({ name: 'agent', arguments: { message: 'send the report' } }, CallToolResultSchema, {
        onprogress: (p) => void progress.push(p),
      });
      const runId = (result.structuredContent as { runId: string }).runId;
      expect(result).toEqual({
        content: [
          {
            type: 'text',
            text: `agent run waiting: its scheduled calls (scheduled: waits until 1970-01-01T00:00:01.000Z) go on by themselves on the server (run ${runId})`,
          },
        ],
        structuredContent: { termination: { type: 'suspended' }, runId, threadId: (result.structuredContent as { threadId: string }).threadId },
        isError: false,
      });
      expect(progress.map((p) => p.message)).toContain('tool later scheduled: waits until 1970-01-01T00:00:01.000Z');
      // Not cancelled: it waits, and the mailbox wakes it.
      expect(await w.status(runId)).toBe('waiting');
      expect(await w.mailbox.wakeScheduled()).toEqual(['c1']);
      expect(await w.settled(runId)).toBe('done');
      expect(w.ran).toEqual([null]);
    } finally {
      await client.close();
    }
  });

  it('ends an A2A stream that waits on a scheduled call when its task is cancelled: CANCELED, the last frame, accepted by the official library', async () => {
    const w = await world({ trigger: true });
    const r = await w.call(ALICE, 'POST', '/v1/a2a/message:stream', {
      message: { messageId: 'm1', contextId: 'ctx-c', role: 'ROLE_USER', parts: [{ text: 'later' }] },
    });
    const { head, taskId } = await untilScheduled(r);
    expect((await w.call(ALICE, 'POST', `/v1/a2a/tasks/${taskId}:cancel`)).status).toBe(200);
    const rest = await readFor(r, 10_000);
    const text = head + rest.text;
    const ended = rest.ended;
    expect(ended).toBe(true);
    expect(statesOf(text).slice(-2)).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_CANCELED']);
    expect((await judgeA2a(text)).findings).toEqual([]);
    expect(w.ran).toEqual([]);
  });
});
