import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Messages, type Message } from '../../src/contract/message.ts';
import type { StreamPart } from '../../src/contract/stream.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import type { ToolExecutionMode } from '../../src/runtime/resolve.ts';
import { MemoryThreadRunStore, type RunCheckpoint, type ThreadRunStore } from '../../src/runtime/thread-run-store.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { UsageError } from '../../src/cli/args.ts';
import { storeOf } from '../../src/cli/serve-parts.ts';
import { CRASH_POINTS, crashAtOf, crashingStore, type CrashPoint } from '../../src/server/crash-at.ts';
import { PartStream } from '../../src/testing/index.ts';

/**
 * The crash hook chaos tests arm with AWAKEN_CRASH_AT: what is true of the store and of the world
 * outside (the tools' executions) at the moment each point is reached. The kill here only notes
 * that moment, and the run goes on.
 */

function model() {
  return {
    name: 'history',
    stream: (request: { readonly messages: readonly Message[] }) => {
      const parts: StreamPart[] =
        request.messages.at(-1)?.role === 'user'
          ? [
              { type: 'tool_call_start', id: 'c1', name: 'charge' },
              { type: 'tool_call_delta', id: 'c1', args_delta: '{"n":1}' },
              { type: 'tool_call_start', id: 'c2', name: 'charge' },
              { type: 'tool_call_delta', id: 'c2', args_delta: '{"n":2}' },
              { type: 'finish', stop_reason: 'ToolUse' },
            ]
          : [
              { type: 'text_delta', delta: 'done' },
              { type: 'finish', stop_reason: 'EndTurn' },
            ];
      return new PartStream(parts);
    },
  };
}

/** What the hook saw when its point was reached: the tools' executions and the store's last write. */
interface Moment {
  readonly executions: number;
  readonly batchStored: boolean;
  readonly statuses: Record<string, string>;
  /** Outcomes the batch record holds of calls that settled while another still ran. */
  readonly outcomes: number;
  readonly toolMessages: number;
}

const last = (store: MemoryThreadRunStore): RunCheckpoint | undefined => store.checkpoints.at(-1);

function momentOf(store: MemoryThreadRunStore, executions: number): Moment {
  const c = last(store);
  const ext = c?.threadState.extensions ?? {};
  const batch = ext['__runtime.tool_batch'] as { outcomes?: Record<string, unknown> } | null | undefined;
  const states = (ext['__runtime.tool_call_states'] ?? {}) as Record<string, { status: string }>;
  return {
    executions,
    batchStored: batch !== undefined && batch !== null,
    statuses: batch === undefined || batch === null ? {} : Object.fromEntries(Object.entries(states).map(([id, s]) => [id, s.status])),
    outcomes: Object.keys(batch?.outcomes ?? {}).length,
    toolMessages: (c?.messages ?? []).filter((m) => m.role === 'tool').length,
  };
}

async function momentsAt(point: CrashPoint, n: number, mode: ToolExecutionMode): Promise<Moment[]> {
  const inner = new MemoryThreadRunStore();
  let executions = 0;
  const moments: Moment[] = [];
  const store: ThreadRunStore = crashingStore(inner, { point, n }, () => moments.push(momentOf(inner, executions)));
  const built = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('p', model())
    .withModel('m', { provider: 'p', model_name: 'history' })
    .withThreadRunStore(store)
    .withAgentSpec({ id: 'agent', model: 'm', sections: { tool_execution: { mode } } as never })
    .withTool(
      defineTool({
        id: 'charge',
        description: 'charge',
        args: z.object({ n: z.number() }),
        // The second call answers a turn later: in parallel, the first has settled while it runs.
        execute: ({ n }) => {
          executions++;
          const result = ToolResults.success('charge', { charged: n });
          return n === 1 ? result : new Promise<typeof result>((r) => setImmediate(() => r(result)));
        },
      }),
    )
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  const r = await built.value.run({ threadId: 't', runId: 'r', messages: [Messages.user('go')] }, new VecEventSink());
  if (!r.ok || r.value.termination.type !== 'natural_end') throw new Error('the run did not end naturally');
  return moments;
}

describe('AWAKEN_CRASH_AT', () => {
  it('reads <point>:<n>, and refuses anything else with one line naming the variable and the points', () => {
    expect(crashAtOf('before-dispatch:2')).toEqual({ point: 'before-dispatch', n: 2 });
    const refusal =
      "AWAKEN_CRASH_AT: 'in-tool:1' is not <point>:<n> with a point among before-batch, before-executing, before-dispatch, after-outcome, before-finalise, in-publication and n from 1";
    expect(crashAtOf('in-tool:1')).toBe(refusal);
    for (const bad of ['before-batch', 'before-batch:0', 'before-batch:x', ':1', 'before-batch:1:2'])
      expect(crashAtOf(bad)).toBe(refusal.replace('in-tool:1', bad));
  });

  it('arms awaken serve only when the variable is set, and stops it at start on a value that is not a point', async () => {
    const plain = storeOf('memory', '--store', {});
    const armed = storeOf('memory', '--store', { AWAKEN_CRASH_AT: 'in-publication:3' });
    expect(armed.checkpoint).not.toBe(plain.checkpoint);
    expect(typeof armed.listThreads).toBe('function');
    expect(await armed.listThreads({ offset: 0, limit: 1 })).toEqual({ items: [], total: 0 });
    expect(() => storeOf('memory', '--store', { AWAKEN_CRASH_AT: 'later' })).toThrow(
      new UsageError(
        "AWAKEN_CRASH_AT: 'later' is not <point>:<n> with a point among before-batch, before-executing, before-dispatch, after-outcome, before-finalise, in-publication and n from 1",
      ),
    );
    await Promise.all([plain.close(), armed.close()]);
  });

  // The store as the kill finds it: the kill before a write sees the write before it.
  // `undefined`: the point is never reached in that mode.
  const expected: Record<CrashPoint, (mode: ToolExecutionMode) => Moment | undefined> = {
    'before-batch': () => ({ executions: 0, batchStored: false, statuses: {}, outcomes: 0, toolMessages: 0 }),
    'before-executing': () => ({ executions: 0, batchStored: true, statuses: { c1: 'new', c2: 'new' }, outcomes: 0, toolMessages: 0 }),
    // Sequential: one call is recorded Executing at a time; parallel: both in one write.
    'before-dispatch': (mode) => ({
      executions: 0,
      batchStored: true,
      statuses: mode === 'sequential' ? { c1: 'running', c2: 'new' } : { c1: 'running', c2: 'running' },
      outcomes: 0,
      toolMessages: 0,
    }),
    // Parallel: the first call (it answers at once) has its outcome stored while the second is still
    // running; the second, settling last, is stored by the settle step (before-finalise).
    'after-outcome': (mode) =>
      mode === 'sequential' ? undefined : { executions: 2, batchStored: true, statuses: { c1: 'running', c2: 'running' }, outcomes: 1, toolMessages: 0 },
    'before-finalise': () => ({ executions: 2, batchStored: true, statuses: { c1: 'succeeded', c2: 'succeeded' }, outcomes: 0, toolMessages: 0 }),
    'in-publication': () => ({ executions: 2, batchStored: true, statuses: { c1: 'succeeded', c2: 'succeeded' }, outcomes: 0, toolMessages: 0 }),
  };

  for (const mode of ['sequential', 'parallel_streaming'] as const)
    for (const point of CRASH_POINTS)
      it(`${mode}: ${point} is reached once per batch, where the durable writes say`, async () => {
        const moment = expected[point](mode);
        expect(await momentsAt(point, 1, mode)).toEqual(moment === undefined ? [] : [moment]);
        // A run with one batch reaches no point twice (sequential Executing is the exception: once per call).
        const second = await momentsAt(point, 2, mode);
        if (point === 'before-executing' || point === 'before-dispatch')
          expect(second.map((m) => m.statuses)).toEqual(
            mode === 'sequential' ? [point === 'before-dispatch' ? { c1: 'succeeded', c2: 'running' } : { c1: 'succeeded', c2: 'new' }] : [],
          );
        else expect(second).toEqual([]);
      });
});
