import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import {
  classifyDivergence,
  DIVERGENCE_CLASSES,
  type DivergenceClass,
  ExpectationsError,
  expectationsJsonSchema,
  readExpectations,
  renderGate,
  replayBaseline,
  type BaselineRun,
} from '../../src/replay/gate.ts';
import type { AgentSpec } from '../../src/contract/agent-spec.ts';
import { replayTranscript, type DivergenceKind } from '../../src/replay/replayer.ts';

/**
 * The upgrade gate as a library (`awaken-ts/testing`): each class of divergence from an edit of one
 * recorded run that makes a replay leave it there, the corpus passing unedited, a manifest accepting
 * what it names (its run and its class) and nothing else, the expectations not met, and a manifest
 * that is wrong refused naming its field. spec/cli/replay-baseline.spec.ts drives it as a command.
 */

const runs = join(import.meta.dirname, '../../fixtures/runs');
const oneTool = readFileSync(join(runs, '03-one-tool.jsonl'), 'utf8');

/** `text` with the first line `pick` matches edited by `edit` (which must change it). */
function edited(text: string, pick: (line: string) => boolean, edit: (line: string) => string): string {
  const lines = text.split('\n');
  const i = lines.findIndex(pick);
  const before = lines[i] as string;
  const after = edit(before);
  if (i < 0 || after === before) throw new Error('the edit changed nothing');
  lines[i] = after;
  return lines.join('\n');
}

/** One edit of `03-one-tool` for each class: what it changes in the recording the replay now does otherwise. */
const EDITS: Readonly<Record<DivergenceClass, string>> = {
  // The recorded agent's prompt: the replayed run asks the model something else than it recorded.
  prompt: edited(
    oneTool,
    (l) => l.startsWith('{"type":"header"'),
    (l) => l.replace('"system_prompt":"You ar', '"system_prompt":"Now you ar'),
  ),
  tool_arguments: edited(
    oneTool,
    (l) => l.startsWith('{"type":"tool"'),
    (l) => l.replace('"arguments":{"text":"ping"}', '"arguments":{"text":"pong"}'),
  ),
  tool_results: edited(
    oneTool,
    (l) => l.includes('"event_type":"tool_call_done"'),
    (l) => l.replace('"echoed":"ping"', '"echoed":"pong"'),
  ),
  state: edited(
    oneTool,
    (l) => l.includes('"event_type":"state_snapshot"'),
    (l) => l.replace('"revision":7', '"revision":70'),
  ),
  events: edited(
    oneTool,
    (l) => l.includes('"event_type":"text_delta"'),
    (l) => l.replace('The echo said ping.', 'The echo said pong.'),
  ),
  termination: edited(
    oneTool,
    (l) => l.includes('"event_type":"run_finish"'),
    (l) => l.replace('"termination":{"type":"natural_end"}', '"termination":{"type":"cancelled"}'),
  ),
  // A message id drawn that the recording does not have: the record, not what the run says.
  history: oneTool.replace('{"type":"env","draw":"id","kind":"message","value":"message-2"}\n', ''),
};

describe('classifyDivergence', () => {
  it.each(DIVERGENCE_CLASSES.map((c) => [c]))('an edit that changes the %s is classed so', async (cls) => {
    const report = await replayTranscript(EDITS[cls]);
    expect(report.identical).toBe(false);
    expect(classifyDivergence(report)).toBe(cls);
  });

  it('the replay names the kind of a divergence the class follows from, and the class follows the kind, not its wording', async () => {
    const kindOf = async (text: string) => {
      const d = (await replayTranscript(text)).divergence;
      return { kind: d?.kind, fields: d?.fields };
    };
    const toolLine = (l: string): boolean => l.startsWith('{"type":"tool"');
    const endLine = (l: string): boolean => l.startsWith('{"type":"end"');
    expect({
      request: await kindOf(EDITS.prompt),
      arguments: await kindOf(EDITS.tool_arguments),
      notRecorded: await kindOf(edited(oneTool, toolLine, (l) => l.replace('"call_id":"', '"call_id":"x'))),
      unreadable: await kindOf(edited(oneTool, toolLine, (l) => l.replace('"type":"tool"', '"type":"tool","extra":1'))),
      noEnd: await kindOf(
        oneTool
          .split('\n')
          .filter((l) => !endLine(l))
          .join('\n'),
      ),
      result: await kindOf(edited(oneTool, endLine, (l) => l.replace('"termination":{"type":"natural_end"}', '"termination":{"type":"cancelled"}'))),
    }).toEqual({
      request: { kind: 'request_changed', fields: undefined },
      arguments: { kind: 'arguments_changed', fields: undefined },
      notRecorded: { kind: 'call_not_recorded', fields: undefined },
      unreadable: { kind: 'unreadable_record', fields: undefined },
      noEnd: { kind: 'no_end_record', fields: undefined },
      result: { kind: 'result_changed', fields: ['termination'] },
    });
    // Reworded messages class as before: the class reads the kind.
    const at = (port: 'llm' | 'tool' | 'end', kind: DivergenceKind, fields?: string[]) =>
      classifyDivergence({ identical: false, divergence: { port, kind, message: 'said otherwise', atEvent: 3, ...(fields !== undefined ? { fields } : {}) } });
    expect([
      at('llm', 'request_changed'),
      at('tool', 'arguments_changed'),
      at('tool', 'call_not_recorded'),
      at('tool', 'unreadable_record'),
      at('end', 'no_end_record'),
      at('end', 'result_changed', ['termination']),
      at('end', 'result_changed', ['response']),
    ]).toEqual(['prompt', 'tool_arguments', 'tool_arguments', 'history', 'history', 'termination', 'events']);
  });

  it('a run that replays identical has no class', async () => {
    const report = await replayTranscript(oneTool);
    expect(report.identical).toBe(true);
    expect(classifyDivergence(report)).toBeUndefined();
  });
});

const folder = (): BaselineRun[] => [
  { name: 'a/prompt.jsonl', text: EDITS.prompt },
  { name: 'one-tool.jsonl', text: oneTool },
  { name: 'state.jsonl', text: EDITS.state },
  { name: 'state-too.jsonl', text: EDITS.state },
];

describe('replayBaseline', () => {
  it('the corpus folder, unedited: every run identical, no class, passed', async () => {
    const report = await replayBaseline(runs);
    expect(report.runs).toHaveLength(48);
    expect(report.runs.every((r) => r.identical && r.class === undefined)).toBe(true);
    expect(report.classes).toEqual([]);
    expect(report.passed).toBe(true);
  });

  it('without a manifest: each divergence counted in its class, the first named; not passed', async () => {
    const report = await replayBaseline(folder());
    expect(report.runs.map((r) => [r.run, r.class ?? 'identical', r.accepted])).toEqual([
      ['a/prompt.jsonl', 'prompt', undefined],
      ['one-tool.jsonl', 'identical', undefined],
      ['state.jsonl', 'state', undefined],
      ['state-too.jsonl', 'state', undefined],
    ]);
    expect(report.classes).toEqual([
      { class: 'prompt', runs: 1, accepted: 0, first: 'a/prompt.jsonl' },
      { class: 'state', runs: 2, accepted: 0, first: 'state.jsonl' },
    ]);
    expect(report.passed).toBe(false);
  });

  it('a manifest accepts the runs it names in the class it names, and only those; what it expected and did not happen is told', async () => {
    const expectations = readExpectations(
      [
        'expected:',
        '  - runs: [state.jsonl, one-tool.jsonl]',
        '    class: state',
        '    why: revisions count from 70 now',
        '  - runs: [a/prompt.jsonl]',
        '    class: tool_results',
        '    why: a wrong guess',
      ].join('\n'),
      folder().map((r) => r.name),
    );
    const report = await replayBaseline(folder(), { expectations });
    expect(report.runs.map((r) => [r.run, r.accepted?.why])).toEqual([
      ['a/prompt.jsonl', undefined],
      ['one-tool.jsonl', undefined],
      ['state.jsonl', 'revisions count from 70 now'],
      ['state-too.jsonl', undefined],
    ]);
    expect(report.classes).toEqual([
      { class: 'prompt', runs: 1, accepted: 0, first: 'a/prompt.jsonl' },
      { class: 'state', runs: 2, accepted: 1, first: 'state.jsonl' },
    ]);
    expect(report.unmet).toEqual([
      { expectation: 0, run: 'one-tool.jsonl', class: 'state', got: 'identical' },
      { expectation: 1, run: 'a/prompt.jsonl', class: 'tool_results', got: 'prompt' },
    ]);
    expect(report.passed).toBe(false);
  });

  it("'*' accepts a class in every run; with every divergence accepted the gate passes, and the table says why", async () => {
    const expectations = readExpectations(
      JSON.stringify({
        expected: [
          { runs: '*', class: 'state', why: 'revisions count from 70 now' },
          { runs: ['a/prompt.jsonl'], class: 'prompt', why: 'the new prompt' },
        ],
      }),
      folder().map((r) => r.name),
    );
    const report = await replayBaseline(folder(), { expectations });
    expect(report.passed).toBe(true);
    expect(report.unmet).toEqual([]);
    expect(renderGate(report)).toBe(
      [
        'result     class   accepted  file',
        'DIFFERS    prompt  yes       a/prompt.jsonl',
        'identical  -       -         one-tool.jsonl',
        'DIFFERS    state   yes       state.jsonl',
        'DIFFERS    state   yes       state-too.jsonl',
        '',
        'prompt: 1 run, 1 accepted; the first, a/prompt.jsonl:12 (a llm record):',
        '  llm (after event #1): request #1 no longer matches the recording: system prompt changed',
        '  accepted: the new prompt',
        '',
        'state: 2 runs, 2 accepted; the first, state.jsonl:25 (an event record):',
        '  first differing event: #7',
        '    - snapshot.revision: 70',
        '    + snapshot.revision: 7',
        '  accepted: revisions count from 70 now',
        '',
        '4 runs: 1 identical, 3 accepted, 0 not accepted — passed',
        '',
      ].join('\n'),
    );
  });
});

describe('replayBaseline with the agents as they are now', () => {
  const recorded = (JSON.parse(oneTool.slice(0, oneTool.indexOf('\n'))) as { agent: AgentSpec }).agent;

  it("a run replays with the agent of its id: a changed prompt is a divergence of class prompt; an unchanged agent, none; another agent's id, not used", async () => {
    const runs = [{ name: 'one-tool.jsonl', text: oneTool }];
    const changed = await replayBaseline(runs, { agents: [{ ...recorded, system_prompt: 'You are terse.' }] });
    expect(changed.runs.map((r) => [r.class, r.divergence?.message])).toEqual([
      ['prompt', 'request #1 no longer matches the recording: system prompt changed'],
    ]);
    expect((await replayBaseline(runs, { agents: [recorded] })).passed).toBe(true);
    expect((await replayBaseline(runs, { agents: [{ ...recorded, id: 'another', system_prompt: 'You are terse.' }] })).passed).toBe(true);
  });

  it('replayTranscript refuses an agent of another id than the run recorded', async () => {
    const report = await replayTranscript(oneTool, { agent: { ...recorded, id: 'another' } });
    expect(report.divergence).toEqual({ port: 'transcript', message: "the run's agent is 'corpus', not 'another'", atEvent: 0, line: 1, unreplayable: true });
  });
});

describe('what the gate says of a run its new code changes, and of one it cannot judge', () => {
  const header = (t: string): { agent: AgentSpec; models: Record<string, { provider: string; model_name: string }> } =>
    JSON.parse(t.slice(0, t.indexOf('\n'))) as { agent: AgentSpec; models: Record<string, { provider: string; model_name: string }> };
  const stopped = readFileSync(join(runs, '18-stop-max-rounds.jsonl'), 'utf8');
  const lines = oneTool.split('\n');
  const classOf = async (text: string, agent?: AgentSpec): Promise<string | undefined> =>
    (await replayBaseline([{ name: 'run.jsonl', text }], agent !== undefined ? { agents: [agent] } : {})).runs[0]?.class;

  it('an agent that stops after more or fewer rounds ends the run otherwise: termination, whatever its records show first', async () => {
    const { agent } = header(stopped);
    expect(await classOf(stopped, { ...agent, max_rounds: agent.max_rounds + 5 })).toBe('termination');
    expect(await classOf(stopped, { ...agent, max_rounds: agent.max_rounds - 1 })).toBe('termination');
    expect(await classOf(oneTool, { ...header(oneTool).agent, max_rounds: 1 })).toBe('termination');
  });

  it('an agent on another model (another provider, the same model name): prompt, from its first request', async () => {
    const h = header(oneTool);
    const main = h.models[h.agent.model] as { model_name: string };
    const twoModels = [JSON.stringify({ ...h, models: { ...h.models, other: { provider: 'p2', model_name: main.model_name } } }), ...lines.slice(1)].join('\n');
    const report = await replayBaseline([{ name: 'run.jsonl', text: twoModels }], { agents: [{ ...h.agent, model: 'other' }] });
    expect(report.runs.map((r) => [r.class, r.divergence?.message])).toEqual([
      ['prompt', "request #1 no longer matches the recording: model changed, 'main' (scripted/scripted-main) → 'other' (p2/scripted-main)"],
    ]);
  });

  it('an event that differs in its ids alone is the history (other draws gave them), not its event class', async () => {
    const renamed = lines
      .map((l) => (l.includes('"event_type":"tool_call_done"') ? l.replace('"message_id":"message-2"', '"message_id":"message-9"') : l))
      .join('\n');
    expect(await classOf(renamed)).toBe('history');
  });

  it('a record that does not read, or a missing end record, is the history, not what the run did after it', async () => {
    const cut = (type: string): string => lines.map((l) => (l.startsWith(`{"type":"${type}"`) ? l.slice(0, 40) : l)).join('\n');
    expect(await classOf(cut('llm'))).toBe('history');
    expect(await classOf(cut('tool'))).toBe('history');
    expect(await classOf(lines.filter((l) => !l.startsWith('{"type":"end"')).join('\n'))).toBe('history');
  });

  it('a run that cannot be replayed (empty, or its agent names a plugin the run never had) is unreplayable, and no manifest accepts it', async () => {
    const runs = [
      { name: 'empty.jsonl', text: '' },
      { name: 'one-tool.jsonl', text: oneTool },
    ];
    const expectations = readExpectations(
      "expected:\n  - runs: '*'\n    class: history\n    why: ids are drawn anew\n",
      runs.map((r) => r.name),
    );
    const report = await replayBaseline(runs, { expectations, agents: [{ ...header(oneTool).agent, plugin_ids: ['nope'] }] });
    expect(report.runs.map((r) => [r.run, r.class, r.accepted, r.divergence?.message])).toEqual([
      ['empty.jsonl', 'unreplayable', undefined, `the transcript is empty (expected format awaken-transcript/12)`],
      ['one-tool.jsonl', 'unreplayable', undefined, `cannot start the run: {"code":"resolve_failed","message":"plugin 'nope' not found"}`],
    ]);
    expect(report.passed).toBe(false);
    expect(report.unmet).toEqual([{ expectation: 0, run: '*', class: 'history', got: 'none' }]);
    expect(renderGate(report)).toBe(
      [
        'result   class         accepted  file',
        'DIFFERS  unreplayable  no        empty.jsonl',
        'DIFFERS  unreplayable  no        one-tool.jsonl',
        '',
        'unreplayable: 2 runs, 0 accepted; the first, empty.jsonl:1 (a header record):',
        '  transcript (before any event): the transcript is empty (expected format awaken-transcript/12)',
        '',
        'expected history in any run (expected[0]), but no run diverged so',
        '',
        '2 runs: 0 identical, 0 accepted, 2 not accepted — failed',
        '',
      ].join('\n'),
    );
    expect(() => readExpectations("expected:\n  - runs: '*'\n    class: unreplayable\n    why: x\n", [])).toThrow(
      new ExpectationsError('expected[0].class', 'one of prompt, tool_arguments, tool_results, state, events, termination, history, not "unreplayable"'),
    );
  });
});

describe('readExpectations: a manifest that cannot be used is refused, naming the field', () => {
  const names = ['one-tool.jsonl', 'a/prompt.jsonl'];
  const refusal = (text: string): string => {
    try {
      readExpectations(text, names);
    } catch (e) {
      if (e instanceof ExpectationsError) return e.message;
      throw e;
    }
    return 'accepted';
  };
  it.each([
    ['expected:\n  - runs: [two-tools.jsonl]\n    class: state\n    why: x\n', "expected[0].runs[0]: 'two-tools.jsonl' is not a run in the folder replayed"],
    [
      'expected:\n  - runs: "*"\n    class: promt\n    why: x\n',
      'expected[0].class: one of prompt, tool_arguments, tool_results, state, events, termination, history, not "promt"',
    ],
    ['expected:\n  - runs: "*"\n    klass: prompt\n    why: x\n', 'expected[0].klass: unknown field'],
    ['expected:\n  - runs: "*"\n    class: prompt\n', 'expected[0].why: missing'],
    ['expected:\n  - runs: []\n    class: prompt\n    why: x\n', "expected[0].runs: a list of at least one run, or '*'"],
    ['expected:\n  - runs: all\n    class: prompt\n    why: x\n', "expected[0].runs: a list of runs or '*'"],
    ['expected: 3\n', 'expected: a list of expectations, each { runs, class, why }'],
    ['', 'a manifest is a map with `expected`: a list of { runs, class, why }'],
    ['{"expected": [}', 'not YAML or JSON: Flow sequence in block collection must be sufficiently indented and end with a ] at line 1, column 15'],
    [
      'expected:\n  - runs: *\n    class: prompt\n    why: x\n',
      "not YAML or JSON: Alias cannot be an empty string at line 2, column 11 (write '*' in quotes: a bare * is a YAML alias)",
    ],
    ['expected:\n  - runs: [one-tool.jsonl, 3]\n    class: prompt\n    why: x\n', 'expected[0].runs[1]: must be a path in the folder (a string)'],
    [
      'expected:\n  - runs: [one-tool.jsonl, one-tool.jsonl]\n    class: prompt\n    why: x\n',
      "expected[0].runs[1]: 'one-tool.jsonl' is named already (runs[0])",
    ],
    ['expected:\n  - runs: "*"\n    class: prompt\n    why: null\n', 'expected[0].why: must be a string, not null'],
  ])('%j', (text, message) => {
    expect(refusal(text)).toBe(message);
  });

  it('a manifest that is right is read as it is', () => {
    expect(refusal('expected:\n  - runs: [a/prompt.jsonl]\n    class: prompt\n    why: x\n')).toBe('accepted');
  });
});

describe('schemas/replay-expectations.schema.json', () => {
  const published = JSON.parse(readFileSync(join(import.meta.dirname, '../../schemas/replay-expectations.schema.json'), 'utf8')) as object;
  it('is the manifest schema, written out', () => {
    expect(published).toEqual(expectationsJsonSchema());
  });

  it("docs/transcript-format.md's manifest is read as it is and holds to the schema", () => {
    const doc = readFileSync(join(import.meta.dirname, '../../docs/transcript-format.md'), 'utf8');
    const yaml = /### An upgrade gate[\s\S]*?```yaml\n([\s\S]*?)```/.exec(doc)?.[1] ?? '';
    const run = 'friday--01a23b99~2dc7b9~2d72d2~2db067~2d3f1724ec8c52.jsonl';
    const manifest = readExpectations(yaml, [run]);
    expect(manifest.expected.map((e) => [e.runs, e.class])).toEqual([
      [[run], 'tool_results'],
      ['*', 'prompt'],
    ]);
    expect(new Ajv2020({ strict: false }).compile(published)(manifest)).toBe(true);
  });

  it('takes what readExpectations takes and refuses what it refuses (an unknown field, a class that is none)', () => {
    const validate = new Ajv2020({ strict: false }).compile(published);
    expect(validate({ $schema: './schema.json', expected: [{ runs: '*', class: 'state', why: 'x' }] })).toBe(true);
    expect(validate({ expected: [{ runs: ['a.jsonl'], class: 'history', why: 'x' }] })).toBe(true);
    expect(validate({ expected: [{ runs: '*', class: 'promt', why: 'x' }] })).toBe(false);
    expect(validate({ expected: [{ runs: '*', klass: 'state', why: 'x' }] })).toBe(false);
    expect(validate({ expected: [{ runs: [], class: 'state', why: 'x' }] })).toBe(false);
  });
});
