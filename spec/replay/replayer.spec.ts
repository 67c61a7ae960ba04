import { describe, expect, it } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { recordRun, type RecordingSetup } from '../../src/replay/recorder.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { jsonChanges, renderChanges } from '../../src/replay/json-diff.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { approvalTool, echoTool, failTool } from '../support/runtime.ts';

function setup(script: readonly ScriptStep[], extra: Partial<RecordingSetup> = {}): RecordingSetup {
  return {
    agent: { id: 'a', model: 'm', system_prompt: 'be brief' },
    models: { m: { provider: 'p', model_name: 'pm' } },
    providers: { p: new ScriptedLlm(script) },
    tools: [echoTool, failTool, approvalTool],
    env: { env: deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, seed: 42, tick: 0 } },
    request: { messages: [Messages.user('hi')] },
    ...extra,
  };
}

const toolScript: ScriptStep[] = [{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }];
const lines = (t: string) => t.trimEnd().split('\n');
const edit = (t: string, f: (records: Record<string, unknown>[]) => void): string => {
  const records = lines(t).map((l) => JSON.parse(l) as Record<string, unknown>);
  f(records);
  return `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;
};

describe('replay divergence reports', () => {
  it('names the request that no longer matches and shows the diff of the normalised request', async () => {
    const { transcript } = await recordRun(setup(toolScript));
    const changed = edit(transcript, (rs) => {
      const agent = rs[0]?.['agent'] as Record<string, unknown>;
      agent['system_prompt'] = 'be verbose';
    });
    const report = await replayTranscript(changed);
    expect(report.identical).toBe(false);
    expect(report.divergence).toMatchObject({ port: 'llm', message: 'request #1 no longer matches the recording: system prompt changed' });
    expect(report.divergence?.diff).toEqual(['- messages[0].content[0].text: "be brief"', '+ messages[0].content[0].text: "be verbose"']);
  });

  it('points at the first differing event with both lines and a readable diff', async () => {
    const { transcript } = await recordRun(setup(toolScript));
    const changed = transcript.replace(
      '"result":{"tool_name":"echo","status":"success","data":{"echoed":"x"}',
      '"result":{"tool_name":"echo","status":"success","data":{"echoed":"y"}',
    );
    const report = await replayTranscript(changed);
    expect(report.identical).toBe(false);
    expect(report.firstDifference).toMatchObject({ index: 6, diff: ['- result.data.echoed: "x"', '+ result.data.echoed: "y"'] });
    expect(report.firstDifference?.expected).toContain('"echoed":"x"');
    expect(report.firstDifference?.actual).toContain('"echoed":"y"');
  });

  it('an inference the transcript does not have is a divergence, never a hang', async () => {
    const { transcript } = await recordRun(setup(toolScript));
    const truncated = edit(transcript, (rs) => {
      const i = rs.findLastIndex((r) => r['type'] === 'llm');
      rs.splice(i, 1);
    });
    const report = await replayTranscript(truncated);
    expect(report.divergence).toMatchObject({ port: 'llm', message: 'request #2 is not in the transcript (the recording made fewer inference calls)' });
    expect(report.termination?.type).toBe('error');
  });

  it('a decision the run waits for that the transcript does not have is a divergence, never a hang', async () => {
    const approve = (ids: readonly string[]) => ids.map((id) => ({ targetId: id, decision: { decision_id: 'd', action: 'resume' as const, updated_at: 0 } }));
    const { transcript } = await recordRun(
      setup([{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'w' } }] }, { text: 'ok' }], { decide: approve }),
    );
    expect((await replayTranscript(transcript)).identical).toBe(true);
    const noDecision = edit(transcript, (rs) => {
      rs.splice(
        rs.findIndex((r) => r['type'] === 'decision'),
        1,
      );
    });
    // Without any record answering a suspension the run is not started waiting: it finishes suspended
    // where the recording went on, and the report says what is missing.
    const report = await replayTranscript(noDecision);
    expect(report.divergence).toMatchObject({ port: 'decision' });
    expect(report.divergence?.message).toMatch(/waits for a decision .* the transcript does not have/);
    expect(report.termination).toEqual({ type: 'suspended' });
    const later = edit(transcript, (rs) => {
      const d = rs.find((r) => r['type'] === 'decision') as Record<string, number>;
      d['after_event'] = (d['after_event'] ?? 0) + 5;
    });
    const moved = await replayTranscript(later);
    expect(moved.divergence?.message).toMatch(/the run waits for a decision after event #\d+, the next recorded decision came after event #\d+/);
  });

  it('a tool call with other arguments, an unknown tool call, and corrupt lines are reported', async () => {
    const { transcript } = await recordRun(setup(toolScript));
    const args = await replayTranscript(
      transcript.replace(
        /"type":"tool","call_id":"c1","name":"echo","arguments":\{"text":"x"\}/,
        '"type":"tool","call_id":"c1","name":"echo","arguments":{"text":"z"}',
      ),
    );
    expect(args.divergence).toMatchObject({ port: 'tool', message: 'tool call echo [c1] has other arguments than recorded' });
    const noTool = await replayTranscript(
      edit(
        transcript,
        (rs) =>
          void rs.splice(
            rs.findIndex((r) => r['type'] === 'tool'),
            1,
          ),
      ),
    );
    expect(noTool.divergence).toMatchObject({ port: 'tool', message: 'tool call echo [c1] is not in the transcript' });
    const l = lines(transcript);
    const envAt = l.findIndex((x) => x.startsWith('{"type":"env"'));
    l[envAt] = '{"type":"env","draw":"now",';
    const corrupt = await replayTranscript(`${l.join('\n')}\n`);
    expect(corrupt.identical).toBe(false);
    expect(corrupt.divergence?.message).toMatch(/is not a valid record/);
  });

  it('a deterministic recording is checked draw by draw against its header env', async () => {
    const { transcript } = await recordRun(setup(toolScript));
    const changed = transcript.replace('"draw":"id","kind":"message","value":"message-1"', '"draw":"id","kind":"message","value":"message-9"');
    const report = await replayTranscript(changed);
    expect(report.divergence?.message).toMatch(
      /env draw #\d+ \(id\(message\)\): the recording says "message-9", the deterministic env of the header gives "message-1"/,
    );
  });

  it('a clock that goes backwards is a divergence (recordings of a real env)', async () => {
    const { transcript } = await recordRun(setup(toolScript, { env: { env: deterministicEnv(), header: { kind: 'recorded' } } }));
    expect((await replayTranscript(transcript)).identical).toBe(true);
    let seen = 0;
    const back = edit(transcript, (rs) => {
      for (const r of rs) if (r['type'] === 'env' && r['draw'] === 'now' && ++seen === 3) r['value'] = 5;
    });
    const report = await replayTranscript(back);
    expect(report.divergence).toMatchObject({ port: 'env' });
    expect(report.divergence?.message).toMatch(/the clock went backwards/);
  });

  it('refuses what is not a transcript, with a message', async () => {
    expect(await replayTranscript('')).toMatchObject({ identical: false, divergence: { port: 'transcript', message: expect.stringContaining('empty') } });
    expect(await replayTranscript('{"type":"event","seq":0,"event":{}}\n')).toMatchObject({ divergence: { port: 'transcript' } });
    expect(await replayTranscript('not json\n')).toMatchObject({ divergence: { port: 'transcript', message: expect.stringContaining('not a header') } });
    const { transcript } = await recordRun(setup(toolScript, { plugins: ['tool-gate'] }));
    expect(await replayTranscript(transcript.replace('"plugins":[{"id":"tool-gate"}]', '"plugins":[{"id":"nope"}]'))).toMatchObject({
      divergence: { message: "plugin 'nope' is neither built in nor in the app" },
    });
  });
});

describe('every record field is verified (an edit that changes no event is still reported)', () => {
  const approvalScript: ScriptStep[] = [{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'x' } }] }, { text: 'done' }];
  const recorded = (script: ScriptStep[] = toolScript) => recordRun(setup(script)).then((r) => r.transcript);
  const lineOf = (t: string, type: string, n = 1): number => {
    let seen = 0;
    return lines(t).findIndex((l) => l.startsWith(`{"type":"${type}"`) && ++seen === n) + 1;
  };

  it('an edited text_delta is the first difference, at its own index, and the diff names only its text', async () => {
    const { transcript: t } = await recordRun(setup([{ text: ['Hel', 'lo', ' there'] }]));
    const events = lines(t).filter((l) => l.startsWith('{"type":"event"'));
    const index = events.findIndex((l) => l.includes('"delta":"lo"'));
    expect(index).toBeGreaterThan(0);
    const report = await replayTranscript(t.replace('"delta":"lo"', '"delta":"LO"'));
    expect(report.identical).toBe(false);
    expect(report.firstDifference).toMatchObject({ index, diff: ['- delta: "LO"', '+ delta: "lo"'] });
  });

  it("an event's seq is checked against its position", async () => {
    const t = await recorded();
    let k = 0;
    const changed = edit(t, (rs) => {
      for (const r of rs) if (r['type'] === 'event' && k++ === 3) r['seq'] = 99;
    });
    const report = await replayTranscript(changed);
    expect(report.identical).toBe(false);
    expect(report.divergence).toMatchObject({ port: 'transcript', message: `line ${lineOf(t, 'event', 4)}: event seq 99, but it is event #3`, atEvent: 3 });
  });

  it("a recorded request is checked against its own digest, and an inference's seq against its order", async () => {
    const t = await recorded();
    const body = edit(t, (rs) => {
      const r = rs.find((x) => x['type'] === 'llm') as { request: { model: string } };
      r.request.model = 'edited';
    });
    const a = await replayTranscript(body);
    expect(a.identical).toBe(false);
    expect(a.divergence).toMatchObject({
      port: 'transcript',
      message: `line ${lineOf(t, 'llm')}: the recorded request of inference #1 does not match its digest`,
    });
    const seq = edit(t, (rs) => {
      const r = rs.filter((x) => x['type'] === 'llm')[1] as { seq: number };
      r.seq = 7;
    });
    const b = await replayTranscript(seq);
    expect(b.divergence).toMatchObject({ port: 'transcript', message: `line ${lineOf(t, 'llm', 2)}: inference seq 7, but it is inference #2` });
  });

  it('of the records that contradict themselves, the one on the earliest line is reported, a digest as a seq', async () => {
    const t = await recorded();
    const firstLlm = lineOf(t, 'llm');
    const secondLlm = lineOf(t, 'llm', 2);
    // An event between the two requests.
    const lines = t.split('\n');
    const between = lines.findIndex((l, i) => i + 1 > firstLlm && i + 1 < secondLlm && l.startsWith('{"type":"event"')) + 1;
    expect(between).toBeGreaterThan(firstLlm);
    const editLine = (text: string, line: number, f: (r: Record<string, unknown>) => void): string =>
      text
        .split('\n')
        .map((l, i) => {
          if (i + 1 !== line) return l;
          const r = JSON.parse(l) as Record<string, unknown>;
          f(r);
          return JSON.stringify(r);
        })
        .join('\n');
    // A request that no longer matches its digest, and an event's seq, both edited.
    const bothEdited = (llm: number): string =>
      editLine(
        editLine(t, llm, (r) => {
          (r['request'] as { model: string }).model = 'edited';
        }),
        between,
        (r) => {
          r['seq'] = 99;
        },
      );
    expect((await replayTranscript(bothEdited(firstLlm))).divergence).toMatchObject({
      port: 'transcript',
      message: `line ${firstLlm}: the recorded request of inference #1 does not match its digest`,
    });
    expect((await replayTranscript(bothEdited(secondLlm))).divergence).toMatchObject({
      port: 'transcript',
      message: `line ${between}: event seq 99, but it is event #${lines.slice(0, between - 1).filter((l) => l.startsWith('{"type":"event"')).length}`,
    });
  });

  it("the header's config_digest is recomputed: a header edit no request shows is reported", async () => {
    const t = await recorded();
    // A tool descriptor the model is sent: the request no longer matches (the more telling report).
    const tool = edit(t, (rs) => {
      const tools = rs[0]?.['tools'] as { description: string }[];
      (tools[0] as { description: string }).description = 'edited';
    });
    expect(await replayTranscript(tool)).toMatchObject({
      identical: false,
      divergence: { port: 'llm', message: 'request #1 no longer matches the recording: tools changed' },
    });
    // A model entry no request names: only the digest shows it.
    const model = edit(t, (rs) => {
      const models = rs[0]?.['models'] as Record<string, unknown>;
      models['spare'] = { provider: 'p', model_name: 'spare' };
    });
    const a = await replayTranscript(model);
    expect(a.identical).toBe(false);
    expect(a.divergence).toMatchObject({
      port: 'transcript',
      message: 'line 1: the header does not match its config_digest (agent, models, tools, plugins, stop policies or circuit breaker edited)',
    });
  });

  it('a decision record that resumes nothing (its decisions removed) is a divergence, never a hang', async () => {
    const approve = (ids: readonly string[]) => ids.map((id) => ({ targetId: id, decision: { decision_id: 'd', action: 'resume' as const, updated_at: 0 } }));
    const { transcript: t } = await recordRun(setup(approvalScript, { decide: approve }));
    expect((await replayTranscript(t)).identical).toBe(true);
    const emptied = edit(t, (rs) => {
      const r = rs.find((x) => x['type'] === 'decision') as { decisions: unknown[] };
      r.decisions = [];
    });
    const report = await replayTranscript(emptied);
    expect(report.identical).toBe(false);
    expect(report.divergence).toMatchObject({ port: 'decision' });
    expect(report.divergence?.message).toMatch(/the run waits for a decision after event #\d+ that the transcript does not have/);
  });

  it("a tool record's decision and its result's tool name are checked against the call", async () => {
    const approve = (ids: readonly string[]) =>
      ids.map((id) => ({ targetId: id, decision: { decision_id: `d-${id}`, action: 'resume' as const, updated_at: 5 } }));
    const { transcript: t } = await recordRun(setup(approvalScript, { decide: approve }));
    expect((await replayTranscript(t)).identical).toBe(true);
    const resumed = lines(t).findLastIndex((l) => l.startsWith('{"type":"tool"'));
    expect(JSON.parse(lines(t)[resumed] as string)).toMatchObject({ resume: { decision_id: 'd-c1', action: 'resume', updated_at: 5 } });
    const first = edit(t, (rs) => {
      delete (rs[resumed] as { resume?: unknown }).resume;
    });
    expect((await replayTranscript(first)).divergence).toMatchObject({
      port: 'tool',
      message: 'tool call approve [c1] is a resume, the recording has a first run',
      line: resumed + 1,
    });
    const other = edit(t, (rs) => {
      (rs[resumed] as { resume: { updated_at: number } }).resume.updated_at = 6;
    });
    const a = await replayTranscript(other);
    expect(a.identical).toBe(false);
    expect(a.divergence).toMatchObject({
      port: 'tool',
      message: 'tool call approve [c1] resumes under another decision than recorded',
      diff: ['- updated_at: 6', '+ updated_at: 5'],
    });
    expect(a.at).toEqual({ line: resumed + 1, record: 'tool' });
    const named = edit(t, (rs) => {
      const r = rs.findLast((x) => x['type'] === 'tool') as { result: { tool_name: string } };
      r.result.tool_name = 'other';
    });
    const b = await replayTranscript(named);
    expect(b.identical).toBe(false);
    expect(b.divergence).toMatchObject({ port: 'tool', message: "tool call approve [c1]: the recorded result names tool 'other'" });
  });

  it('the header says only what the run used: a seed without random draws, a stream read to its end marked interrupted, are reported', async () => {
    const t = await recorded();
    expect(JSON.parse(lines(t)[0] as string).env).toEqual({ kind: 'deterministic', start: 1_700_000_000_000, tick: 0 });
    const seeded = edit(t, (rs) => {
      (rs[0] as { env: Record<string, unknown> }).env = { kind: 'deterministic', start: 1_700_000_000_000, seed: 42, tick: 0 };
    });
    expect(await replayTranscript(seeded)).toMatchObject({
      identical: false,
      divergence: {
        port: 'transcript',
        message: 'line 1: the header gives env.seed, but the run drew no random number (the seed is written only for runs that draw one)',
      },
      at: { line: 1, record: 'header' },
    });
    const interrupted = edit(t, (rs) => {
      (rs.find((x) => x['type'] === 'llm') as { interrupted?: boolean }).interrupted = true;
    });
    expect((await replayTranscript(interrupted)).divergence).toMatchObject({
      port: 'llm',
      message: 'request #1: the recording says the run stopped reading the stream, but it read it to the end',
      line: lineOf(t, 'llm'),
    });
  });
});

describe('transcript size', () => {
  it("grows with the run, not with its square: an inference's record holds what its request adds", async () => {
    const echoes = (n: number): ScriptStep[] => [
      ...Array.from({ length: n }, (_, i) => ({ tool_calls: [{ id: `c${i}`, name: 'echo', arguments: { text: `t${i}` } }] })),
      { text: 'done' },
    ];
    const largestLlmLine = async (n: number): Promise<number> => {
      const { transcript } = await recordRun(setup(echoes(n), { agent: { id: 'a', model: 'm', system_prompt: 'be brief', max_rounds: n + 2 } }));
      expect((await replayTranscript(transcript)).identical).toBe(true);
      return Math.max(
        ...lines(transcript)
          .filter((l) => l.startsWith('{"type":"llm"'))
          .map((l) => l.length),
      );
    };
    const short = await largestLlmLine(10);
    const long = await largestLlmLine(120);
    // The first request carries the tool descriptors; every later one only its new messages.
    expect(long).toBe(short);
  });
});

describe('json diff', () => {
  it('lists leaf changes by path, additions and removals included', () => {
    expect(jsonChanges({ a: 1, b: [1, 2], c: { d: 'x' } }, { a: 1, b: [1, 3, 4], c: {} })).toEqual([
      { path: 'b[1]', expected: 2, actual: 3 },
      { path: 'b[2]', actual: 4 },
      { path: 'c.d', expected: 'x' },
    ]);
    expect(renderChanges(jsonChanges(1, 2))).toEqual(['- (root): 1', '+ (root): 2']);
    expect(renderChanges(jsonChanges([...Array(30).keys()], []), 2)).toHaveLength(3);
  });
});
