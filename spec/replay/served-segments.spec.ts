import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { segmentFileName, ServedRecorder, transcriptFileName, transcriptIdsOf } from '../../src/replay/served.ts';
import { timelineOf, transcriptRecords } from '../../src/replay/timeline.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { delegateToolId } from '../../src/runtime/delegation.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { decisionFor } from '../../src/runtime/run-loop.ts';
import { MemoryThreadRunStore } from '../../src/runtime/thread-run-store.ts';
import { asPrincipal } from '../../src/server/principal.ts';
import type { RunRegistry } from '../../src/server/run-registry.ts';
import { approvalTool } from '../support/runtime.ts';
import { parked, SCRIPT, served } from '../support/segments.ts';

/**
 * A served run that parks, is let go (a reload, a shutdown) and is taken up again from the store goes
 * on in a new segment, on the code current then: the recorder writes a transcript for each segment,
 * under a name that never overwrites an earlier one, each naming the app version that ran it, and
 * each replays identical on its own.
 */

const files = (dir: string): string[] =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .sort();
const headerOf = (text: string): Record<string, unknown> => JSON.parse(text.split('\n')[0] as string) as Record<string, unknown>;

/** A run parked on version 1, let go at a reload and steered by `steer` on version 2: its second segment once written. */
async function secondSegment(steer: (registry: RunRegistry) => unknown): Promise<{ readonly dir: string; readonly runId: string; readonly text: string }> {
  const { dir, registry, reload } = served();
  const runId = await parked(registry);
  await reload();
  await steer(registry);
  const file = join(dir, segmentFileName('t1', runId, 2));
  await vi.waitFor(() => expect(existsSync(file)).toBe(true));
  return { dir, runId, text: readFileSync(file, 'utf8') };
}

/** Resumes the parked call `c1`. */
const approve = (registry: RunRegistry) => registry.decideAnywhere('t1', [decisionFor('c1', 'resume', 5, { decisionId: 'd1' })]);

/** A replay that is identical at every port and event. */
async function expectIdentical(text: string): Promise<void> {
  const report = await replayTranscript(text);
  expect(report.divergence).toBeUndefined();
  expect(report.identical).toBe(true);
}

describe('ServedRecorder: a run taken up again from the store is recorded segment by segment', () => {
  it('a run parked on version 1 and resumed on version 2 after a reload: two transcripts, each naming its version, each identical on replay', async () => {
    const { dir, registry, reload } = served();
    const runId = await parked(registry);
    expect(await reload()).toBe(1);
    await vi.waitFor(() => expect(files(dir)).toEqual([transcriptFileName('t1', runId)]));
    const decided = await registry.decideAnywhere('t1', [decisionFor('c1', 'resume', 5, { decisionId: 'd1' })]);
    expect(decided).toMatchObject({ ok: true });
    await vi.waitFor(() => expect(files(dir)).toEqual([transcriptFileName('t1', runId), segmentFileName('t1', runId, 2)].sort()));

    const first = readFileSync(join(dir, transcriptFileName('t1', runId)), 'utf8');
    const second = readFileSync(join(dir, segmentFileName('t1', runId, 2)), 'utf8');
    expect(headerOf(first)).toMatchObject({ app: { file: 'app.ts', version: '1' } });
    expect(headerOf(first)['segment']).toBeUndefined();
    expect((headerOf(first)['request'] as Record<string, unknown>)['run_state']).toBeUndefined();
    expect(headerOf(second)).toMatchObject({ app: { file: 'app.ts', version: '2' }, segment: 2, request: { thread_id: 't1', run_id: runId, messages: [] } });
    expect(
      (headerOf(second)['request'] as { run_state?: { extensions: Record<string, unknown> } }).run_state?.extensions['__runtime.run_lifecycle'],
    ).toMatchObject({ status: 'waiting', run_id: runId });

    // The first segment ended where the run was let go; the second ran the decision on version 2's code.
    expect(JSON.parse(first.trimEnd().split('\n').at(-1) as string)).toMatchObject({ type: 'end', result: { termination: { type: 'suspended' } } });
    const decision = second.split('\n').find((l) => l.startsWith('{"type":"decision"'));
    expect(JSON.parse(decision as string)).toEqual({
      type: 'decision',
      after_event: 0,
      decisions: [{ target_id: 'c1', decision: { decision_id: 'd1', action: 'resume', updated_at: 5 } }],
    });
    expect(second).toContain('"by":"2"');
    expect(JSON.parse(second.trimEnd().split('\n').at(-1) as string)).toMatchObject({
      type: 'end',
      result: { response: 'deployed', termination: { type: 'natural_end' } },
    });

    for (const text of [first, second]) await expectIdentical(text);
    // The timeline of each names the version that ran it.
    expect(timelineOf(transcriptRecords(first)).app).toEqual({ file: 'app.ts', version: '1' });
    expect(timelineOf(transcriptRecords(second))).toMatchObject({ app: { file: 'app.ts', version: '2' }, segment: 2, resumed: true });
  });

  it('a segment whose recorded decision is edited diverges at the decision line; one whose run state is edited diverges too', async () => {
    const { text } = await secondSegment(approve);
    const lines = text.split('\n');
    const at = lines.findIndex((l) => l.startsWith('{"type":"decision"'));
    const denied = lines.map((l, i) => (i === at ? l.replace('"action":"resume"', '"action":"cancel"') : l)).join('\n');
    const report = await replayTranscript(denied);
    expect(report.identical).toBe(false);
    expect(report.at?.line).toBeGreaterThanOrEqual(at + 1);
    // The state it was revived from is an input: a run state that no longer waits cannot be revived.
    const notWaiting = text.replace('"status":"waiting"', '"status":"running"');
    expect(notWaiting).not.toBe(text);
    expect(await replayTranscript(notWaiting)).toMatchObject({ identical: false });
  });

  it("two principals: each segment is the thread owner's (its header says so); another principal's decision takes nothing up and writes nothing", async () => {
    const { dir, registry, reload } = served();
    const runId = await asPrincipal('alice', () => parked(registry, 'own'));
    await reload();
    const bobs = await asPrincipal('bob', () => registry.decideAnywhere('own', [decisionFor('c1', 'resume', 5, { decisionId: 'd1' })]));
    expect(bobs).toMatchObject({ ok: false, error: { code: 'run_not_found' } });
    expect(await asPrincipal('bob', () => registry.adopt(runId))).toBe(false);
    expect(files(dir)).toEqual([transcriptFileName('own', runId)]);
    expect(await asPrincipal('alice', () => registry.decideAnywhere('own', [decisionFor('c1', 'resume', 5, { decisionId: 'd1' })]))).toMatchObject({
      ok: true,
    });
    await vi.waitFor(() => expect(files(dir)).toHaveLength(2));
    const owners = files(dir).map((f) => (headerOf(readFileSync(join(dir, f), 'utf8'))['request'] as { owner?: string }).owner);
    expect(owners).toEqual(['alice', 'alice']);
  });

  it('a cancel of a segment before it emits anything is recorded at after_event 0 and replays identical', async () => {
    const { text } = await secondSegment(async (registry) => {
      expect(await registry.adopt('t1')).toBe(true);
      expect(registry.cancel('t1').ok).toBe(true);
    });
    expect(text.split('\n').filter((l) => l.startsWith('{"type":"cancel"'))).toEqual(['{"type":"cancel","after_event":0}']);
    await expectIdentical(text);
  });

  it('decided and cancelled before it emits anything: the decision, then the cancel, both at after_event 0, replay identical in that order', async () => {
    const { text } = await secondSegment(async (registry) => {
      expect(await registry.adopt('t1')).toBe(true);
      expect(registry.decide('t1', [decisionFor('c1', 'resume', 5, { decisionId: 'd1' })]).ok).toBe(true);
      expect(registry.cancel('t1').ok).toBe(true);
    });
    expect(
      text
        .split('\n')
        .filter((l) => /^\{"type":"(decision|cancel)"/.test(l))
        .map((l) => JSON.parse(l) as { type: string; after_event: number })
        .map((r) => [r.type, r.after_event]),
    ).toEqual([
      ['decision', 0],
      ['cancel', 0],
    ]);
    await expectIdentical(text);
  });

  it('what a segment does not read is refused at line 1 (input messages, overrides, what a client brought besides messages); a decision or cancel before any event in a run that starts is reported at its line', async () => {
    const { dir, runId, text } = await secondSegment(approve);
    const [head, ...rest] = text.split('\n');
    const header = JSON.parse(head as string) as { request: Record<string, unknown> };
    const withRequest = (request: Record<string, unknown>): string => [JSON.stringify({ ...header, request }), ...rest].join('\n');
    const { thread_id, run_id, agent_id, history, thread_state, run_state } = header.request;
    for (const edited of [
      withRequest({ thread_id, run_id, agent_id, messages: [{ role: 'user', content: [{ type: 'text', text: 'rm -rf' }] }], history, thread_state, run_state }),
      withRequest({ thread_id, run_id, agent_id, messages: [], overrides: { temperature: 0.9 }, history, thread_state, run_state }),
      // A revived run keeps its client's tools in its run state; it reads none of these from a request.
      withRequest({
        thread_id,
        run_id,
        agent_id,
        messages: [],
        client_tools: [{ id: 'pick_color', name: 'pick_color', description: 'Pick a colour', parameters: { type: 'object' } }],
        history,
        thread_state,
        run_state,
      }),
      withRequest({ thread_id, run_id, agent_id, messages: [], client_state: { theme: 'dark' }, history, thread_state, run_state }),
      withRequest({
        thread_id,
        run_id,
        agent_id,
        messages: [],
        client_context: [{ description: 'page', value: 'checkout' }],
        history,
        thread_state,
        run_state,
      }),
    ]) {
      expect(await replayTranscript(edited)).toMatchObject({
        identical: false,
        divergence: {
          port: 'transcript',
          line: 1,
          message:
            'a segment taken up from the store (request.run_state) has no input of its own: its messages are [] and it has no overrides, client tools, client state or client context',
        },
      });
    }
    // The first segment, with a cancel before its first event: reported where the cancel is.
    const first = readFileSync(join(dir, transcriptFileName('t1', runId)), 'utf8')
      .trimEnd()
      .split('\n');
    const cancelled = [...first.slice(0, 1), '{"type":"cancel","after_event":0}', ...first.slice(1)].join('\n');
    expect(await replayTranscript(cancelled)).toMatchObject({
      identical: false,
      divergence: { port: 'cancel', line: 2, message: 'a cancel before any event, but only a segment taken up from the store (request.run_state) has one' },
    });
  });

  it('a run let go twice has three segments; a file already holding a name is never written over', async () => {
    const { dir, registry, reload } = served({
      script: [SCRIPT[0] as ScriptStep, { tool_calls: [{ id: 'c2', name: 'approve', arguments: { what: 'again' } }] }, { text: 'both done' }],
    });
    const runId = await parked(registry);
    // Someone's file under the third segment's name: the third segment takes the next name.
    writeFileSync(join(dir, segmentFileName('t1', runId, 3)), 'not mine\n');
    await reload();
    await registry.decideAnywhere('t1', [decisionFor('c1', 'resume', 5, { decisionId: 'd1' })]);
    await vi.waitFor(() => expect(registry.waiting('t1')?.calls.map((c) => c.callId)).toEqual(['c2']));
    await reload();
    await vi.waitFor(() => expect(files(dir)).toHaveLength(3));
    await registry.decideAnywhere('t1', [decisionFor('c2', 'resume', 6, { decisionId: 'd2' })]);
    await vi.waitFor(() => expect(files(dir)).toHaveLength(4));
    expect(readFileSync(join(dir, segmentFileName('t1', runId, 3)), 'utf8')).toBe('not mine\n');
    const names = [transcriptFileName('t1', runId), segmentFileName('t1', runId, 2), segmentFileName('t1', runId, 4)];
    expect(names.map((n) => transcriptIdsOf(n))).toEqual([
      { threadId: 't1', runId },
      { threadId: 't1', runId, segment: 2 },
      { threadId: 't1', runId, segment: 4 },
    ]);
    const texts = names.map((n) => readFileSync(join(dir, n), 'utf8'));
    expect(texts.map((t) => [headerOf(t)['segment'], (headerOf(t)['app'] as { version: string }).version])).toEqual([
      [undefined, '1'],
      [2, '2'],
      [4, '3'],
    ]);
    for (const text of texts) await expectIdentical(text);
    expect(JSON.parse(texts[2]?.trimEnd().split('\n').at(-1) as string)).toMatchObject({ result: { response: 'both done' } });
  });

  it("a parent cancelled while its delegate waits: the child's thread and state, loaded to end it, are not written as the parent's, and the parent's transcript replays identical", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-segments-delegate-'));
    const recorder = new ServedRecorder({
      dir,
      models: { 'm-o': { provider: 'o', model_name: 'mo' }, 'm-r': { provider: 'r', model_name: 'mr' } },
      tools: [approvalTool.descriptor],
    });
    const subEnv = deterministicEnv();
    const built = new AgentRuntimeBuilder()
      .withEnv(recorder.env(deterministicEnv()))
      .withTool(recorder.tool(approvalTool))
      .withDelegation({ env: { ...subEnv, ids: { next: (k) => `sub-${subEnv.ids.next(k)}` } }, wrap: (t) => recorder.tool(t) })
      .withThreadRunStore(recorder.store(new MemoryThreadRunStore()))
      .withProvider('o', recorder.llm(new ScriptedLlm([{ tool_calls: [{ id: 'c1', name: delegateToolId('researcher'), arguments: { prompt: 'x' } }] }])))
      .withModel('m-o', { provider: 'o', model_name: 'mo' })
      .withProvider('r', recorder.llm(new ScriptedLlm([{ tool_calls: [{ id: 'k1', name: 'approve', arguments: { what: 'x' } }] }])))
      .withModel('m-r', { provider: 'r', model_name: 'mr' })
      .withAgentSpec({ id: 'orchestrator', model: 'm-o', system_prompt: 'c', delegates: ['researcher'] })
      .withAgentSpec({ id: 'researcher', model: 'm-r', system_prompt: 'r', allowed_tools: ['approve'] })
      .build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    recorder.attach(built.value);
    const request = { threadId: 't', runId: 'run-p', agentId: 'orchestrator', messages: [Messages.user('go')] };
    const started = await recorder.observe(request, (sink) => built.value.start(request, sink, { waitForDecisions: true }), { emit: () => undefined });
    if (!started.ok) throw new Error(JSON.stringify(started.error));
    expect(await started.value.parked()).toBe(true);
    started.value.cancel();
    expect((await started.value.done).termination).toEqual({ type: 'cancelled' });
    await vi.waitFor(() => expect(files(dir)).toEqual(['t--run~2dp.jsonl']));
    const text = readFileSync(join(dir, 't--run~2dp.jsonl'), 'utf8');
    const header = headerOf(text)['request'] as Record<string, unknown>;
    expect(header['history']).toEqual([]);
    expect(header['run_state']).toBeUndefined();
    await expectIdentical(text);
  });
});
