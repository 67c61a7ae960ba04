import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import type { RunHandle } from '../../src/runtime/agent-runtime.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { parkedCallsOf, trackEvent, waitingCallOf, type LiveRun } from '../../src/server/live-run.ts';
import type { Logger } from '../../src/server/log.ts';
import { harness } from '../support/runtime.ts';

/** What the registry learns of a run: from its own events while it is here, from the store when it is not. */

function liveRun(): LiveRun {
  return {
    runId: 'r',
    threadId: 't',
    agentId: 'a',
    handle: {} as RunHandle,
    createdAt: 0,
    input: [],
    fromSeq: 0,
    status: 'running',
    stopRequested: false,
    waiting: new Map(),
    calls: new Map(),
    stepMessageId: 'r',
    terminalSeen: false,
    released: undefined,
    owner: undefined,
  };
}

function recordingLogger(): Logger & { readonly lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (message: string) => void lines.push(`${level} ${message}`);
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as Logger & { readonly lines: string[] };
}

describe('trackEvent', () => {
  it('follows a run through a suspension and its resume: status, the calls it waits on, the step that made them', () => {
    const run = liveRun();
    const logger = recordingLogger();
    const ticket = {
      suspension: { id: 's1', action: 'confirm', message: 'ok?' },
      pending: { id: 'c1', name: 'approve', arguments: { what: 'x' } },
      resume_mode: 'replay_tool_call' as const,
    };
    const events: AgentEvent[] = [
      { event_type: 'run_start', thread_id: 't', run_id: 'r' },
      { event_type: 'step_start', message_id: 'm1' },
      { event_type: 'tool_call_ready', id: 'c0', name: 'echo', arguments: { text: 'a' } },
      { event_type: 'tool_call_ready', id: 'c1', name: 'approve', arguments: { what: 'x' } },
      { event_type: 'tool_call_done', id: 'c0', message_id: 'b1', result: ToolResults.success('echo', 'a'), outcome: 'succeeded' },
      { event_type: 'tool_call_done', id: 'c1', message_id: 'b1', result: ToolResults.suspended('approve', 'waiting', ticket), outcome: 'suspended' },
      { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'suspended' } },
    ];
    for (const e of events) trackEvent(run, e, logger);
    expect(run.status).toBe('waiting');
    expect(run.terminalSeen).toBe(true);
    expect(run.calls.size).toBe(0);
    expect([...run.waiting.values()]).toEqual([
      { callId: 'c1', name: 'approve', arguments: { what: 'x' }, messageId: 'm1', suspension: { id: 's1', action: 'confirm', message: 'ok?' } },
    ]);

    trackEvent(run, { event_type: 'run_start', thread_id: 't', run_id: 'r' }, logger);
    expect(run.status).toBe('running');
    expect(run.terminalSeen).toBe(false);
    trackEvent(run, { event_type: 'tool_call_resumed', target_id: 'c1', result: { approved: true } }, logger);
    expect(run.waiting.size).toBe(0);
    trackEvent(run, { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'error', value: 'boom' } }, logger);
    expect(run.status).toBe('done');
    expect(logger.lines).toEqual(['info run started', 'info run finished', 'info run started', 'error run failed']);
  });
});

describe('parkedCallsOf', () => {
  it('reads from a stored thread state exactly the calls the live batch waits on, in model order', async () => {
    const h = harness(
      [
        {
          tool_calls: [
            { id: 'c0', name: 'approve', arguments: { what: 'first' } },
            { id: 'c1', name: 'echo', arguments: { text: 'x' } },
            { id: 'c2', name: 'approve', arguments: { what: 'second' } },
          ],
        },
      ],
      { spec: { sections: { tool_execution: { mode: 'parallel_streaming' } } } },
    );
    const started = await h.runtime.start({ threadId: 't', messages: [Messages.user('go')] }, new VecEventSink());
    if (!started.ok) throw new Error('start');
    expect(await started.value.parked()).toBe(true);
    const live = started.value.waitingOn().map(waitingCallOf);
    const stored = parkedCallsOf(h.store.checkpoints.at(-1)?.threadState);
    expect(stored.map((c) => c.callId)).toEqual(['c0', 'c2']);
    expect(stored).toEqual(live);
    expect(stored[0]).toMatchObject({
      name: 'approve',
      arguments: { what: 'first' },
      suspension: { id: 's-c0', action: 'confirm', message: 'approve first?' },
    });
    started.value.cancel();
    await started.value.done;
  });

  it('is empty for no state, a state without a batch, and a state that does not decode', () => {
    expect(parkedCallsOf(undefined)).toEqual([]);
    expect(parkedCallsOf({ revision: 1, extensions: {} })).toEqual([]);
    expect(parkedCallsOf({ revision: 1, extensions: { '__runtime.tool_batch': { calls: 'not a list' }, '__runtime.tool_call_states': {} } })).toEqual([]);
  });
});
