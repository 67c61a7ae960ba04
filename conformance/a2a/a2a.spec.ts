import { StreamResponse as Codec } from '@a2a-js/sdk';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { encodeA2a, frameA2a, initialA2aState, taskStateOf, transcodeA2a } from '../../src/protocols/a2a/encoder.ts';
import { judgeA2a, type A2aVerdict } from '../../src/protocols/a2a/judge.ts';
import { runResumedOf } from '../../src/protocols/resumed.ts';
import { runResumed, takenUp } from '../resumed.ts';
import { eventsOf, goldenOf, runEvents, streams } from '../support.ts';

/** What the official client decoded must be the run: its text, tool calls, results and final state. */
function expectSameContent(events: readonly AgentEvent[], v: A2aVerdict): void {
  const end = events.findIndex((e) => e.event_type === 'run_finish' || e.event_type === 'error');
  const run = end < 0 ? events : events.slice(0, end + 1);
  expect(v.text).toBe(run.map((e) => (e.event_type === 'text_delta' ? e.delta : '')).join(''));
  const terminal = run.at(-1);
  expect(v.state).toBe(terminal?.event_type === 'run_finish' && end >= 0 ? taskStateOf(terminal.termination) : 'TASK_STATE_FAILED');
  // Tool calls and results ride on WORKING status messages as data parts.
  const data = v.frames.flatMap((f) =>
    f.payload?.$case === 'statusUpdate'
      ? (f.payload.value.status?.message?.parts ?? []).flatMap((p) => (p.content?.$case === 'data' ? [p.content.value as Record<string, { id?: string }>] : []))
      : [],
  );
  const calls = data.flatMap((d) => (d['toolCall'] !== undefined ? [d['toolCall'].id] : []));
  const results = data.flatMap((d) => (d['toolResult'] !== undefined ? [d['toolResult'].id] : []));
  expect(calls).toEqual(run.flatMap((e) => (e.event_type === 'tool_call_ready' ? [e.id] : [])));
  expect(results).toEqual(run.flatMap((e) => (e.event_type === 'tool_call_done' ? [e.id] : e.event_type === 'tool_call_resumed' ? [e.target_id] : [])));
  // Where a run taken up again went on rides the same way.
  expect(data.flatMap((d) => (d['runResumed'] !== undefined ? [d['runResumed']] : []))).toEqual(run.flatMap((e) => runResumedOf(e) ?? []));
}

describe('A2A 1.0 message:stream encoder, judged by @a2a-js/sdk', () => {
  it.each(streams)('%s matches its golden frames byte for byte', (file) => {
    expect(frameA2a(encodeA2a(eventsOf(file)))).toBe(goldenOf('a2a', file));
  });

  it.each(streams)('%s passes the judge and the official client decodes the run', async (file) => {
    const events = eventsOf(file);
    const v = await judgeA2a(frameA2a(encodeA2a(events)));
    expect(v.problems).toEqual([]);
    expectSameContent(events, v);
  });

  it('a tool’s progress reaches the client as WORKING updates with a toolProgress data part, in order (book: 上报 Tool 进度)', async () => {
    const v = await judgeA2a(frameA2a(encodeA2a(eventsOf('run-tool-activity-and-stream-output.events.jsonl'))));
    expect(v.problems).toEqual([]);
    // As the SDK's codec decoded them (proto oneofs as {$case, value}).
    type Decoded = {
      payload?: { $case?: string; value?: { status?: { message?: { parts?: { content?: { $case?: string; value?: { toolProgress?: unknown } } }[] } } } };
    };
    const reports = v.frames.flatMap((f) => {
      const d = f as Decoded;
      const parts = d.payload?.$case === 'statusUpdate' ? (d.payload.value?.status?.message?.parts ?? []) : [];
      return parts.flatMap((p) => (p.content?.$case === 'data' && p.content.value?.toolProgress !== undefined ? [p.content.value.toolProgress] : []));
    });
    expect(reports).toEqual([
      { id: 'c1', name: 'report', status: 'running', progress: 0.5, message: 'step 1' },
      { id: 'c1', name: 'report', status: 'running', progress: 1, message: 'step 2' },
    ]);
  });

  it('a run taken up again after its process stopped: a WORKING update says where it went on, in words and as a runResumed data part', async () => {
    const frames = encodeA2a(takenUp(eventsOf('run-one-tool.events.jsonl'), { from: 'tool_batch', step: 2 }));
    for (const f of frames) expect(Codec.toJSON(Codec.fromJSON(f))).toEqual(f);
    const v = await judgeA2a(frameA2a(frames));
    expect(v.problems).toEqual([]);
    const message = v.frames.flatMap((f) => (f.payload?.$case === 'statusUpdate' ? [f.payload.value.status?.message] : []))[1];
    expect(message?.parts.map((p) => p.content)).toEqual([
      { $case: 'text', value: 'The run was taken up again after its process stopped: inside the tool batch of step 2.' },
      { $case: 'data', value: { runResumed: { from: 'tool_batch', step: 2 } } },
    ]);
  });

  it('task id is the run id and context id the thread id', () => {
    const first = encodeA2a(eventsOf('run-plain-answer.events.jsonl'))[0];
    expect(first).toEqual({ task: { id: 'run-1', contextId: 'thread-1', status: { state: 'TASK_STATE_SUBMITTED' } } });
  });

  it('maps terminations to task states', () => {
    expect(taskStateOf({ type: 'natural_end' })).toBe('TASK_STATE_COMPLETED');
    expect(taskStateOf({ type: 'stopped', value: { code: 'max_rounds' } })).toBe('TASK_STATE_COMPLETED');
    expect(taskStateOf({ type: 'suspended' })).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(taskStateOf({ type: 'cancelled' })).toBe('TASK_STATE_CANCELED');
    expect(taskStateOf({ type: 'error', value: 'x' })).toBe('TASK_STATE_FAILED');
    expect(taskStateOf({ type: 'blocked', value: 'x' })).toBe('TASK_STATE_REJECTED');
  });

  it('the stream ends at the final state: nothing after it, not even a resumed run', () => {
    let s = initialA2aState();
    [s] = transcodeA2a(s, { event_type: 'run_start', thread_id: 't', run_id: 'r' });
    [s] = transcodeA2a(s, { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'suspended' } });
    expect(transcodeA2a(s, { event_type: 'run_start', thread_id: 't', run_id: 'r' })[1]).toEqual([]);
    expect(transcodeA2a(initialA2aState(), { event_type: 'text_delta', delta: 'before the run' })[1]).toEqual([]);
  });

  it('a stream cut short ends the task FAILED, closing the artifact', async () => {
    const v = await judgeA2a(frameA2a(encodeA2a(eventsOf('run-plain-answer.events.jsonl').slice(0, 4))));
    expect(v.problems).toEqual([]);
    expect(v.state).toBe('TASK_STATE_FAILED');
    const last = v.frames.at(-2)?.payload;
    expect(last?.$case === 'artifactUpdate' && last.value.lastChunk).toBe(true);
  });

  const task = { task: { id: 't', contextId: 'c', status: { state: 'TASK_STATE_SUBMITTED' } } };
  const done = { statusUpdate: { taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } } };
  it.each([
    ['a v0.3 lowercase state', [task, { statusUpdate: { taskId: 't', contextId: 'c', status: { state: 'completed' } } }]],
    ['a v0.3 kind discriminator', [task, { kind: 'status-update', taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' }, final: true }]],
    [
      'a non-canonical default value',
      [task, { artifactUpdate: { taskId: 't', contextId: 'c', artifact: { artifactId: 'a', parts: [{ text: 'x' }] }, append: false } }, done],
    ],
    [
      'a lowercase role',
      [
        task,
        {
          statusUpdate: {
            taskId: 't',
            contextId: 'c',
            status: { state: 'TASK_STATE_COMPLETED', message: { messageId: 'm', role: 'agent', parts: [{ text: 'x' }] } },
          },
        },
      ],
    ],
    ['a first frame that is not the task', [done]],
    ['a frame after the final state', [task, done, done]],
    ['no final state', [task]],
    ['another task', [task, { statusUpdate: { taskId: 'u', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } } }]],
  ])('the judge rejects %s (it is live)', async (_name, frames) => {
    const v = await judgeA2a(frames.map((f) => `data: ${JSON.stringify(f)}\n\n`).join(''));
    expect(v.problems.length).toBeGreaterThan(0);
  });

  it('every frame of every conformance stream round-trips through the SDK codec', () => {
    // The codec closure, on its own: canonical JSON in, the same JSON out.
    for (const file of streams) for (const f of encodeA2a(eventsOf(file))) expect(Codec.toJSON(Codec.fromJSON(f))).toEqual(f);
  });

  it('property: the stream of any run, taken up again or not, passes the judge and the client decodes its text and final state', async () => {
    await fc.assert(
      fc.asyncProperty(runEvents, fc.option(runResumed, { nil: undefined }), async (run, at) => {
        const events = at === undefined ? await run : takenUp(await run, at);
        const v = await judgeA2a(frameA2a(encodeA2a(events)));
        expect(v.problems).toEqual([]);
        expectSameContent(events, v);
      }),
      { numRuns: 50 },
    );
  });
});
