import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/contract/json.ts';
import { Messages, type Message } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { forkView } from '../../src/replay/fork-view.ts';
import { forkTranscript, transcriptDigest, type ForkResult } from '../../src/replay/fork.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { recordRun } from '../../src/replay/recorder.ts';
import { applyDeltas, readTranscript, type Header, type LlmRecord } from '../../src/replay/transcript.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import type { Tool } from '../../src/runtime/tool.ts';

const dir = resolve(import.meta.dirname, '../../fixtures/runs');
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.jsonl'))
  .sort();
const corpus = (file: string): string => readFileSync(join(dir, file), 'utf8');
const headerOf = (text: string): Header => JSON.parse(text.slice(0, text.indexOf('\n'))) as Header;
const endOf = (text: string): { result: { response: string; steps: number; termination: unknown }; messages: Message[] } =>
  JSON.parse(text.trimEnd().split('\n').at(-1) as string) as never;
const llmRecords = (text: string): LlmRecord[] => readTranscript(text).flatMap((l) => (l.ok && l.record.type === 'llm' ? [l.record] : []));
const withoutIds = (messages: readonly Message[]): unknown[] => messages.map(({ id: _id, ...m }) => m);
const made = (f: ForkResult): Extract<ForkResult, { ok: true }> => {
  if (!f.ok) throw new Error(`no fork: ${f.error.message}`);
  return f;
};

/**
 * What forking each corpus run at each of its steps gives: a child (`ok`), or why not — a step that
 * ends with the run waiting for a decision, a run that delegates (`cannot_run`); a step after which
 * the recording has no answer the run can use — it was cancelled mid-stream, or ended there by a
 * stop or a block the fork goes on past, or the handoff's active agent is lost on take-up (below) —
 * (`model_required`).
 */
const OUTCOMES: Readonly<Record<string, readonly string[]>> = {
  '01-plain-answer.jsonl': ['ok'],
  '02-reasoning.jsonl': ['ok'],
  '03-one-tool.jsonl': ['ok', 'ok'],
  '04-parallel-tools-sequential.jsonl': ['ok', 'ok'],
  '05-parallel-tools-parallel-streaming.jsonl': ['ok', 'ok'],
  '06-parallel-tools-parallel-batch-approval.jsonl': ['ok', 'ok'],
  '07-tool-result-error.jsonl': ['ok', 'ok'],
  '08-tool-error-thrown.jsonl': ['ok', 'ok'],
  '09-tool-invalid-arguments.jsonl': ['ok', 'ok'],
  '10-tool-activity-and-stream-output.jsonl': ['ok', 'ok'],
  '11-suspension-resumed-replay-tool-call.jsonl': ['cannot_run', 'ok'],
  '12-suspension-resumed-use-decision-as-tool-result.jsonl': ['cannot_run', 'ok'],
  '13-suspension-resumed-pass-decision-to-tool.jsonl': ['cannot_run', 'ok'],
  '14-suspension-cancelled-by-decision.jsonl': ['cannot_run', 'ok'],
  '15-suspension-left-waiting.jsonl': ['cannot_run'],
  '16-cancellation-mid-stream.jsonl': ['model_required'],
  '17-cancellation-before-first-step.jsonl': [],
  '18-stop-max-rounds.jsonl': ['ok', 'ok'],
  '19-stop-token-budget.jsonl': ['ok', 'ok'],
  '20-stop-timeout.jsonl': ['ok', 'ok', 'ok'],
  '21-stop-consecutive-errors.jsonl': ['ok', 'ok', 'model_required'],
  '22-stop-on-tool.jsonl': ['model_required'],
  '23-stop-content-match.jsonl': ['ok'],
  '24-stop-loop-detection.jsonl': ['ok', 'ok'],
  '25-retry-with-fallback-model.jsonl': ['ok'],
  '26-circuit-breaker-open.jsonl': ['ok'],
  '27-inference-error.jsonl': ['model_required'],
  '28-blocked-by-gate.jsonl': ['model_required'],
  '29-gate-ask-resumed.jsonl': ['cannot_run', 'ok'],
  '30-behavior-requested.jsonl': ['ok'],
  '31-context-truncation.jsonl': ['ok'],
  '32-context-compaction.jsonl': ['ok'],
  '33-truncation-recovery.jsonl': ['ok', 'ok'],
  '34-deferred-tools-cycle.jsonl': ['ok', 'ok', 'ok', 'ok', 'ok', 'ok'],
  '35-permission-ask-approved.jsonl': ['cannot_run', 'ok'],
  '36-permission-denied.jsonl': ['model_required'],
  '37-reminder-cooldown.jsonl': ['ok', 'ok', 'ok', 'ok'],
  '38-state-machine-read-before-write.jsonl': ['ok', 'ok', 'ok', 'ok'],
  '39-state-machine-continuation.jsonl': ['ok', 'ok', 'ok', 'ok'],
  '40-handoff-overlay.jsonl': ['ok', 'ok', 'ok'],
  '41-delegation-local.jsonl': ['cannot_run', 'cannot_run'],
  '42-delegation-child-suspended.jsonl': ['cannot_run', 'cannot_run'],
  '43-a2ui-render.jsonl': ['ok', 'ok'],
  '44-skills-activation.jsonl': ['ok', 'ok', 'ok', 'ok'],
  '45-delegation-remote-a2a.jsonl': ['cannot_run', 'cannot_run'],
  '46-observability-spans.jsonl': ['ok', 'ok'],
  '47-client-tool-resumed.jsonl': ['cannot_run', 'ok'],
  '48-a2ui-v09-action.jsonl': ['ok', 'ok'],
};

/**
 * Forks without an edit, from a step the run went on from, that do not end as their parent did, and
 * why: the fork's clock is its own (a timeout reads other times), and a run whose history ends with
 * the model's answer is taken up as one that answered (the continuation plugin's next step is not).
 */
const ENDS_OTHERWISE: Readonly<Record<string, string>> = {
  '20-stop-timeout.jsonl@1': 'its own clock',
  '20-stop-timeout.jsonl@2': 'its own clock',
  '39-state-machine-continuation.jsonl@2': 'a run whose history ends with an answer is taken up as answered',
};

describe('forkTranscript: a recorded run forked from a step', () => {
  it('every corpus run at every step: the child names its parent and step and replays identical; without an edit it ends as its parent', async () => {
    const outcomes: Record<string, string[]> = {};
    const otherwise: string[] = [];
    for (const file of files) {
      const text = corpus(file);
      const parentEnd = endOf(text);
      outcomes[file] = [];
      for (let at = 1; at <= parentEnd.result.steps; at++) {
        const f = await forkTranscript(text, { atStep: at, parentName: file });
        outcomes[file].push(f.ok ? 'ok' : f.error.code);
        if (!f.ok) continue;
        const header = headerOf(f.transcript);
        expect(header.fork).toEqual({ parent: file, parent_digest: transcriptDigest(text), at_step: at });
        expect(header.request).toMatchObject({ messages: [], recovered: true });
        expect(await replayTranscript(f.transcript), `${file}@${at}`).toMatchObject({ identical: true });
        // The steps go on from the fork point: none is lost or counted twice, a step a stop ended included.
        expect(f.result.steps, `${file}@${at}`).toBeGreaterThanOrEqual(at);
        expect(f.transcript).toContain(`"event_type":"activity_snapshot","message_id":"fork-message-1","activity_type":"run_resumed"`);
        if (at === parentEnd.result.steps || f.inferences.model > 0) continue;
        const end = endOf(f.transcript);
        const same =
          end.result.response === parentEnd.result.response &&
          end.result.steps === parentEnd.result.steps &&
          JSON.stringify(end.result.termination) === JSON.stringify(parentEnd.result.termination) &&
          JSON.stringify(withoutIds(end.messages)) === JSON.stringify(withoutIds(parentEnd.messages));
        if (!same) otherwise.push(`${file}@${at}`);
        // The studio's side-by-side view agrees: a fork that ends as its parent parts nowhere.
        const view = forkView(text, f.transcript, at);
        expect(
          view.rows.map((r) => r.step),
          `${file}@${at}`,
        ).toEqual(Array.from({ length: parentEnd.result.steps - at }, (_, i) => at + 1 + i));
        if (same) expect({ parted: view.parted_at, sameEnd: view.same_end }, `${file}@${at}`).toEqual({ parted: undefined, sameEnd: true });
        else expect(view.parted_at !== undefined || !view.same_end, `${file}@${at}`).toBe(true);
      }
    }
    expect(outcomes).toEqual(OUTCOMES);
    expect(otherwise).toEqual(Object.keys(ENDS_OTHERWISE));
  }, 120_000);

  it('an edited system prompt: the recording cannot answer it, so a model must; the child asks with the new prompt', async () => {
    const text = corpus('03-one-tool.jsonl');
    const edits = [{ path: '/agent/system_prompt', value: 'Be brief.' }];
    expect(await forkTranscript(text, { atStep: 1, edits })).toEqual({
      ok: false,
      error: {
        code: 'model_required',
        message: 'step 2: the request differs from the recorded one at messages[0].content[0].text: a model must answer from here (--model)',
        step: 2,
      },
    });
    const f = made(await forkTranscript(text, { atStep: 1, edits, model: new ScriptedLlm([{ text: 'Brief.' }]) }));
    expect(f.inferences).toEqual({ recorded: 0, model: 1 });
    expect(f.result.response).toBe('Brief.');
    expect(headerOf(f.transcript).agent.system_prompt).toBe('Be brief.');
    // Its clock goes on after the parent's last reading (1700000000000 throughout), 1 ms a reading.
    const nows = [...f.transcript.matchAll(/\{"type":"env","draw":"now","value":(\d+)\}/g)].map((m) => Number(m[1]) - 1_700_000_000_000);
    expect(nows).toEqual(nows.map((_, i) => i + 1));
    const [asked] = applyDeltas(llmRecords(f.transcript).map((r) => r.request));
    expect(asked?.messages[0]).toMatchObject({ role: 'system', content: [{ type: 'text', text: 'Be brief.' }] });
    expect(await replayTranscript(f.transcript)).toMatchObject({ identical: true });
  });

  it('an edited tool result reaches the model; an appended user message goes on past the end', async () => {
    const text = corpus('03-one-tool.jsonl');
    const point = made(await forkTranscript(text, { atStep: 1 })).point;
    const toolAt = point.messages.findIndex((m) => m.role === 'tool');
    expect(toolAt).toBeGreaterThan(0);
    const result = ToolResults.success('echo', { echoed: 'pong' });
    const f = made(
      await forkTranscript(text, {
        atStep: 1,
        edits: [{ path: `/messages/${toolAt}/content/0/text`, value: JSON.stringify(result.data) }],
        model: new ScriptedLlm([{ text: 'It said pong.' }]),
      }),
    );
    const [asked] = applyDeltas(llmRecords(f.transcript).map((r) => r.request));
    expect(JSON.stringify(asked?.messages[toolAt + 1])).toContain('pong');
    expect(f.result.response).toBe('It said pong.');

    const last = made(
      await forkTranscript(text, {
        atStep: 2,
        edits: [{ path: '/messages/-', value: { role: 'user', content: [{ type: 'text', text: 'and again?' }] } as unknown as JsonValue }],
        model: new ScriptedLlm([{ text: 'Again: ping.' }]),
      }),
    );
    expect(last.result).toMatchObject({ response: 'Again: ping.', steps: 3 });
    expect(await replayTranscript(last.transcript)).toMatchObject({ identical: true });
  });

  it('an edited state key goes into the store the child is taken up from; a value its key refuses is one line', async () => {
    const text = corpus('38-state-machine-read-before-write.jsonl');
    expect(made(await forkTranscript(text, { atStep: 1 })).point.state['tool_fsm_metrics']).toMatchObject({ denials: 1 });
    const f = made(await forkTranscript(text, { atStep: 1, edits: [{ path: '/state/tool_fsm_metrics/denials', value: 7 }] }));
    const request = headerOf(f.transcript).request;
    expect({ ...request.thread_state?.extensions, ...request.run_state?.extensions }['tool_fsm_metrics']).toMatchObject({ denials: 7 });
    const snapshots = f.transcript.split('\n').filter((l) => l.includes('"event_type":"state_snapshot"'));
    expect(snapshots.at(-1)).toContain('"denials":7');
    expect(await replayTranscript(f.transcript)).toMatchObject({ identical: true });
    expect(await forkTranscript(text, { atStep: 1, edits: [{ path: '/state/tool_fsm_metrics', value: null }] })).toEqual({
      ok: false,
      error: { code: 'invalid_edit', message: '/state/tool_fsm_metrics: the key does not take this value: Invalid input: expected object, received null' },
    });
  });

  it('a step a stop ended is gone on from after that step; the recording answers from the fork point on, retries and fallbacks counted', async () => {
    const stopped = made(await forkTranscript(corpus('18-stop-max-rounds.jsonl'), { atStep: 2 }));
    expect(stopped.result.steps).toBe(2);
    const echo: Tool = {
      descriptor: headerOf(corpus('03-one-tool.jsonl')).tools.find((t) => t.id === 'echo') as Tool['descriptor'],
      execute: (args) => ToolResults.success('echo', { echoed: (args as { text: string }).text }),
    };
    // Step 1's inference fails once and is tried again: two records for one inference.
    const { transcript } = await recordRun({
      agent: { id: 'a', model: 'm', system_prompt: 'You answer.', sections: { retry: { max_retries: 1, backoff_base_ms: 1 } } },
      models: { m: { provider: 'p', model_name: 'scripted' } },
      providers: { p: new ScriptedLlm([{ error: 'down' }, { tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }]) },
      tools: [echo],
      env: { env: deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, tick: 0 } },
      request: { messages: [Messages.user('go')] },
    });
    expect(llmRecords(transcript)).toHaveLength(3);
    const f = made(await forkTranscript(transcript, { atStep: 1 }));
    expect(f.inferences).toEqual({ recorded: 1, model: 0 });
    expect(f.result).toMatchObject({ response: 'done', steps: 2 });
  });

  it('a call before the fork point is not answered again by its record: the same call after it needs the tool', async () => {
    const text = corpus('03-one-tool.jsonl');
    const again = (): ScriptedLlm => new ScriptedLlm([{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'ping' } }] }, { text: 'Again.' }]);
    const edits = [{ path: '/messages/-', value: { role: 'user', content: [{ type: 'text', text: 'once more' }] } as unknown as JsonValue }];
    expect(await forkTranscript(text, { atStep: 2, edits, model: again() })).toEqual({
      ok: false,
      error: { code: 'tool_required', message: 'step 3: the recording does not answer the call of echo [c1]: its tool must run it (--app)', step: 3 },
    });
  });

  it('a fork of a fork: steps count over the whole run, and one before the segment is named so', async () => {
    const text = corpus('34-deferred-tools-cycle.jsonl');
    const child = made(await forkTranscript(text, { atStep: 2, parentName: 'parent.jsonl' })).transcript;
    const grandchild = made(await forkTranscript(child, { atStep: 4, parentName: 'child.jsonl' }));
    expect(headerOf(grandchild.transcript).fork).toEqual({ parent: 'child.jsonl', parent_digest: transcriptDigest(child), at_step: 4 });
    expect(grandchild.result.steps).toBe(endOf(text).result.steps);
    // Side by side, the segment and its fork are matched by the steps over the whole run: they part nowhere.
    const view = forkView(child, grandchild.transcript, 4);
    expect({
      steps: view.rows.map((r) => [r.step, r.same]),
      parted: view.parted_at,
      sameEnd: view.same_end,
      parent: view.parent.steps,
      fork: view.fork.steps,
    }).toEqual({
      steps: [
        [5, true],
        [6, true],
      ],
      parted: undefined,
      sameEnd: true,
      parent: 6,
      fork: 6,
    });
    expect(await forkTranscript(child, { atStep: 2 })).toEqual({
      ok: false,
      error: { code: 'step_past_end', message: 'step 2 ended before this segment, which goes on from step 2: fork the transcript that has it', step: 2 },
    });
  });

  it('a call the recording does not answer runs the tool given, else the fork stops naming the step and the tool', async () => {
    const text = corpus('03-one-tool.jsonl');
    const script = () => new ScriptedLlm([{ tool_calls: [{ id: 'call_new', name: 'echo', arguments: { text: 'again' } }] }, { text: 'Twice.' }]);
    const edits = [{ path: '/agent/system_prompt', value: 'Echo twice.' }];
    expect(await forkTranscript(text, { atStep: 1, edits, model: script() })).toEqual({
      ok: false,
      error: { code: 'tool_required', message: 'step 2: the recording does not answer the call of echo [call_new]: its tool must run it (--app)', step: 2 },
    });
    const echo: Tool = {
      descriptor: headerOf(text).tools.find((t) => t.id === 'echo') as Tool['descriptor'],
      execute: (args) => ToolResults.success('echo', { echoed: (args as { text: string }).text }),
    };
    const f = made(await forkTranscript(text, { atStep: 1, edits, model: script(), tools: [echo] }));
    expect(f.result).toMatchObject({ response: 'Twice.', steps: 3 });
    expect(await replayTranscript(f.transcript)).toMatchObject({ identical: true });
  });

  it('bad input: one line each — a step past the end, a field that is not there, an edit of the wrong shape, another agent, a parent that no longer replays', async () => {
    const text = corpus('03-one-tool.jsonl');
    const fork = (atStep: number, path: string, value: JsonValue) => forkTranscript(text, { atStep, edits: [{ path, value }] });
    expect(await forkTranscript(text, { atStep: 3 })).toEqual({
      ok: false,
      error: { code: 'step_past_end', message: "step 3 is past the run's end: it has 2 step(s)", step: 3 },
    });
    expect(await fork(1, '/agent/nope', 1)).toEqual({ ok: false, error: { code: 'no_such_field', message: '/agent/nope: the fork point has no /agent/nope' } });
    expect(await fork(1, '/messages/9/content', 1)).toEqual({
      ok: false,
      error: { code: 'no_such_field', message: '/messages/9/content: the fork point has no /messages/9 (3 item(s))' },
    });
    expect(await fork(1, 'agent', 1)).toEqual({
      ok: false,
      error: { code: 'no_such_field', message: 'agent: a path into the fork point starts with / (/agent, /messages, /state, /plugins)' },
    });
    expect(await fork(1, '/agent/max_rounds', 'many')).toEqual({
      ok: false,
      error: { code: 'invalid_edit', message: '/agent/max_rounds: Invalid input: expected number, received string' },
    });
    expect(await fork(1, '/agent/id', 'other')).toEqual({
      ok: false,
      error: { code: 'invalid_edit', message: '/agent/id: a fork runs the same agent (corpus)' },
    });
    expect(await fork(1, '/agent/delegates/-', 'helper')).toEqual({
      ok: false,
      error: { code: 'invalid_edit', message: '/agent/delegates: a fork runs no sub-runs (they would not be recorded to go on from)' },
    });
    // The recorded result of step 1's call changed: the replay leaves the recording before the fork point.
    const tampered = text.replace(
      '{"type":"tool","call_id":"c1","name":"echo","arguments":{"text":"ping"},"activity":[],"result":{"tool_name":"echo","status":"success","data":{"echoed":"ping"}',
      '{"type":"tool","call_id":"c1","name":"echo","arguments":{"text":"ping"},"activity":[],"result":{"tool_name":"echo","status":"success","data":{"echoed":"pong"}',
    );
    expect(tampered).not.toBe(text);
    const refused = await forkTranscript(tampered, { atStep: 1 });
    expect(refused).toEqual({
      ok: false,
      error: {
        code: 'prefix_diverges',
        message: 'the run does not replay up to step 1: line 22 (event #6) differs: - result.data.echoed: "ping"',
        step: 1,
      },
    });
    // Past the fork point a changed record is the fork's to answer, not a divergence of its prefix.
    expect((await forkTranscript(text.replace('"delta":"The echo said ping."', '"delta":"The echo said pong."'), { atStep: 1 })).ok).toBe(true);
  });

  it('property: any one edit of a fork point is a child that replays identical, or one typed error — never a throw', async () => {
    const forkable = files.flatMap((file) => (OUTCOMES[file] ?? []).flatMap((o, i) => (o === 'ok' ? [{ file, at: i + 1 }] : [])));
    const points = new Map<string, { text: string; paths: string[] }>();
    for (const { file, at } of forkable.filter((_, i) => i % 4 === 0)) {
      const text = corpus(file);
      const point = made(await forkTranscript(text, { atStep: at })).point;
      const paths: string[] = [];
      const walk = (v: unknown, path: string): void => {
        paths.push(path);
        if (Array.isArray(v)) for (const [i, x] of v.entries()) walk(x, `${path}/${i}`);
        else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`);
      };
      for (const k of ['agent', 'messages', 'state', 'plugins'] as const) walk(point[k], `/${k}`);
      points.set(`${file}@${at}`, { text, paths });
    }
    const keys = [...points.keys()];
    const value = fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string({ maxLength: 3 }), { maxLength: 2 }));
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: keys.length - 1 }), fc.nat(), value, fc.boolean(), async (k, p, v, bogus) => {
        const key = keys[k] as string;
        const { text, paths } = points.get(key) as { text: string; paths: string[] };
        const path = bogus ? `${paths[p % paths.length]}/nowhere` : (paths[p % paths.length] as string);
        const f = await forkTranscript(text, {
          atStep: Number(key.split('@')[1]),
          edits: [{ path, value: v }],
          model: new ScriptedLlm([{ text: 'a' }, { text: 'b' }, { text: 'c' }]),
        });
        if (!f.ok) {
          expect(['no_such_field', 'invalid_edit', 'cannot_run', 'tool_required', 'model_required']).toContain(f.error.code);
          expect(f.error.message).not.toContain('\n');
          return;
        }
        expect(await replayTranscript(f.transcript)).toMatchObject({ identical: true });
        expect(f.result.steps).toBeGreaterThanOrEqual(Number(key.split('@')[1]));
      }),
      { numRuns: 60, seed: 20261206 },
    );
  }, 120_000);
});
