import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { migrateTranscript, MigrationFailure } from '../../src/replay/migrate.ts';
import { configDigest, type Header } from '../../src/replay/transcript.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';

const fixtures = resolve(import.meta.dirname, '../../fixtures');
const olds = readdirSync(join(fixtures, 'runs-format-1')).filter((f) => f.endsWith('.jsonl'));
const twos = readdirSync(join(fixtures, 'runs-format-2')).filter((f) => f.endsWith('.jsonl'));
const threes = readdirSync(join(fixtures, 'runs-format-3')).filter((f) => f.endsWith('.jsonl'));
const fours = readdirSync(join(fixtures, 'runs-format-4')).filter((f) => f.endsWith('.jsonl'));
const fives = readdirSync(join(fixtures, 'runs-format-5')).filter((f) => f.endsWith('.jsonl'));
const sixes = readdirSync(join(fixtures, 'runs-format-6')).filter((f) => f.endsWith('.jsonl'));
const sevens = readdirSync(join(fixtures, 'runs-format-7')).filter((f) => f.endsWith('.jsonl'));
const eights = readdirSync(join(fixtures, 'runs-format-8')).filter((f) => f.endsWith('.jsonl'));
const nines = readdirSync(join(fixtures, 'runs-format-9')).filter((f) => f.endsWith('.jsonl'));
const tens = readdirSync(join(fixtures, 'runs-format-10')).filter((f) => f.endsWith('.jsonl'));
const elevens = readdirSync(join(fixtures, 'runs-format-11')).filter((f) => f.endsWith('.jsonl'));
const v3old = (file: string): string => readFileSync(join(fixtures, 'runs-format-3', file), 'utf8');
const v4old = (file: string): string => readFileSync(join(fixtures, 'runs-format-4', file), 'utf8');
const v5old = (file: string): string => readFileSync(join(fixtures, 'runs-format-5', file), 'utf8');
const v6old = (file: string): string => readFileSync(join(fixtures, 'runs-format-6', file), 'utf8');
const v7old = (file: string): string => readFileSync(join(fixtures, 'runs-format-7', file), 'utf8');
const v8old = (file: string): string => readFileSync(join(fixtures, 'runs-format-8', file), 'utf8');
const v9old = (file: string): string => readFileSync(join(fixtures, 'runs-format-9', file), 'utf8');
const v10old = (file: string): string => readFileSync(join(fixtures, 'runs-format-10', file), 'utf8');
const v11old = (file: string): string => readFileSync(join(fixtures, 'runs-format-11', file), 'utf8');
const decisionLine = (text: string): string | undefined => text.split('\n').find((l) => l.startsWith('{"type":"decision"'));
const v1 = (file: string): string => readFileSync(join(fixtures, 'runs-format-1', file), 'utf8');
const v2old = (file: string): string => readFileSync(join(fixtures, 'runs-format-2', file), 'utf8');
/** The corpus run, in the current format. */
const v2 = (file: string): string => readFileSync(join(fixtures, 'runs', file), 'utf8');
const withoutThread = (text: string): string => `${text.trimEnd().split('\n').slice(0, -1).join('\n')}\n`;
const events = (text: string): string[] => text.split('\n').filter((l) => l.startsWith('{"type":"event",'));
/** Event lines with the run lifecycle's step count blanked: what format 5 rewrites in a run that waited (`FORMAT_5_REWRITES`). */
const eventsButStepCounts = (text: string): string[] => events(text).map((l) => l.replace(/"step_count":\d+/g, '"step_count":_'));
const stepCounts = (text: string): number[] => [...text.matchAll(/"__runtime\.run_lifecycle":\{[^}]*"step_count":(\d+)/g)].map((m) => Number(m[1]));

describe('older transcript formats → 12', () => {
  it.each(olds)('%s migrates to the corpus run, every event line unchanged but the step count of a step that waited', (file) => {
    const migrated = migrateTranscript(v1(file));
    expect(migrated).toBe(withoutThread(v2(file)));
    expect(eventsButStepCounts(migrated)).toEqual(eventsButStepCounts(v1(file)));
    expect(migrated).not.toContain('"runtime"');
    expect(migrated).not.toContain('"options"');
    expect(migrated).not.toContain('"resumed"');
    expect(migrated).not.toContain('"type":"end"');
  });

  it.each(olds)('%s still replays identical as it is (an older transcript is migrated first)', async (file) => {
    const report = await replayTranscript(v1(file));
    expect(report.divergence).toBeUndefined();
    expect(report.identical).toBe(true);
    // What format 2 adds, how the run ended, is what the corpus run records.
    expect(JSON.stringify(report.end)).toBe(v2(file).trimEnd().split('\n').at(-1));
  });

  it('refuses a format-1 transcript whose fields disagree, naming the line, and replay reports it', async () => {
    const text = v1('11-suspension-resumed-replay-tool-call.jsonl');
    const flipped = text.replace('"options":{"wait_for_decisions":true}', '"options":{"wait_for_decisions":false}');
    expect(() => migrateTranscript(flipped)).toThrow(new MigrationFailure(1, 'options.wait_for_decisions is false, but the transcript has decision records'));
    const digest = text.replace('"model_name":"scripted-main"', '"model_name":"scripted-maim"');
    expect(() => migrateTranscript(digest)).toThrow('line 1: the header does not match its config_digest');
    const orphan = text.replace(/\{"type":"decision".*\n/, '');
    expect(() => migrateTranscript(orphan)).toThrow(MigrationFailure);
    const report = await replayTranscript(flipped);
    expect(report).toMatchObject({ identical: false, divergence: { port: 'transcript', line: 1 }, at: { line: 1, record: 'header' } });
    expect(report.divergence?.message).toMatch(/^cannot migrate this awaken-transcript\/1 transcript: line 1: options\.wait_for_decisions/);
  });

  it.each(twos)('format 2 → 10: %s migrates to the corpus run, each request written as its change, and replays identical as it is', async (file) => {
    const migrated = migrateTranscript(v2old(file));
    expect(migrated).toBe(v2(file));
    expect(eventsButStepCounts(migrated)).toEqual(eventsButStepCounts(v2old(file)));
    expect(migrated).toContain('"kept":0');
    expect(await replayTranscript(v2old(file))).toMatchObject({ identical: true });
    // A format-2 request that does not match its own digest is not carried over.
    const edited = v2old(file).replace('"You are the corpus agent."', '"You are the edited agent."');
    expect(() => migrateTranscript(edited)).toThrow(/the header does not match its config_digest|the recorded request does not match its digest/);
  });

  it.each(threes)('format 3 → 10: %s migrates to the corpus run and replays identical as it is', async (file) => {
    const migrated = migrateTranscript(v3old(file));
    expect(migrated).toBe(v2(file));
    expect(eventsButStepCounts(migrated)).toEqual(eventsButStepCounts(v3old(file)));
    expect(await replayTranscript(v3old(file))).toMatchObject({ identical: true });
  });

  it('format 3 → 4: a resume decision for a call suspended in use_decision_as_tool_result mode loses its id and time; other decisions are kept whole', () => {
    const used = migrateTranscript(v3old('12-suspension-resumed-use-decision-as-tool-result.jsonl'));
    expect(decisionLine(v3old('12-suspension-resumed-use-decision-as-tool-result.jsonl'))).toContain('"decision_id":"d-c1"');
    expect(decisionLine(used)).toBe(
      '{"type":"decision","after_event":11,"decisions":[{"target_id":"c1","decision":{"action":"resume","result":{"answer":"from the user"}}}]}',
    );
    const replayed = migrateTranscript(v3old('11-suspension-resumed-replay-tool-call.jsonl'));
    expect(decisionLine(replayed)).toBe(decisionLine(v3old('11-suspension-resumed-replay-tool-call.jsonl')));
    expect(decisionLine(replayed)).toContain('"updated_at":1700000000000');
  });

  it.each(fours)('format 4 → 10: %s migrates to the corpus run and replays identical as it is', async (file) => {
    expect(migrateTranscript(v4old(file))).toBe(v2(file));
    expect(await replayTranscript(v4old(file))).toMatchObject({ identical: true });
  });

  it('format 4 → 10: a header without plugins changes only its tag and gains no owner (none can be given to a run recorded before); a run that never waited keeps every other line', () => {
    const before = v4old('03-one-tool.jsonl');
    const after = migrateTranscript(before);
    expect(after).toBe(before.replace('{"type":"header","format":"awaken-transcript/4",', '{"type":"header","format":"awaken-transcript/12",'));
    expect(after.split('\n')[0]).not.toContain('"owner"');
  });

  it('format 4 → 5: a step that waited for a decision counts from its end on (it parked the run), every other line kept', () => {
    const before = v4old('11-suspension-resumed-replay-tool-call.jsonl');
    const after = migrateTranscript(before);
    expect(stepCounts(before)).toEqual([0, 0, 1, 1]);
    expect(stepCounts(after)).toEqual([1, 1, 2, 2]);
    const [a, b] = [before.split('\n'), after.split('\n')];
    const changed = a.flatMap((l, i) => (l === b[i] ? [] : [i]));
    expect(changed).toHaveLength(5);
    expect(b[0]?.startsWith('{"type":"header","format":"awaken-transcript/12",')).toBe(true);
    for (const i of changed.slice(1)) {
      expect(b[i]).toMatch(/^\{"type":"event","seq":\d+,"event":\{"event_type":"state_snapshot"/);
      expect(b[i]?.replace(/"step_count":\d+/, '')).toBe(a[i]?.replace(/"step_count":\d+/, ''));
    }
    // A run left waiting: its one step counted as it parked.
    expect(stepCounts(migrateTranscript(v4old('15-suspension-left-waiting.jsonl')))).toEqual(
      stepCounts(v4old('15-suspension-left-waiting.jsonl')).map((n) => n + 1),
    );
  });

  it('format 4 → 10: a header that does not match its config_digest is refused, naming line 1', async () => {
    const edited = v4old('03-one-tool.jsonl').replace('"model_name":"scripted-main"', '"model_name":"scripted-maim"');
    expect(() => migrateTranscript(edited)).toThrow(new MigrationFailure(1, 'the header does not match its config_digest'));
    expect(await replayTranscript(edited)).toMatchObject({ identical: false, divergence: { port: 'transcript', line: 1 } });
  });

  it.each(fives)('format 5 → 10: %s migrates to the corpus run and replays identical as it is', async (file) => {
    expect(migrateTranscript(v5old(file))).toBe(v2(file));
    expect(await replayTranscript(v5old(file))).toMatchObject({ identical: true });
  });

  it('format 5 → 10: only the header changes — its tag, each plugin id written as {id}, the config digest over them — every other line kept byte for byte', () => {
    const before = v5old('44-skills-activation.jsonl');
    const after = migrateTranscript(before);
    const [a, b] = [before.split('\n'), after.split('\n')];
    expect(b.slice(1)).toEqual(a.slice(1));
    const [was, is] = [JSON.parse(a[0] as string) as Record<string, unknown>, JSON.parse(b[0] as string) as Record<string, unknown>];
    expect(was['plugins']).toEqual(['skills-discovery', 'skills-active-instructions']);
    expect(is['plugins']).toEqual([{ id: 'skills-discovery' }, { id: 'skills-active-instructions' }]);
    expect(is['config_digest']).toBe(configDigest(is as unknown as Header));
    expect(is['config_digest']).not.toBe(was['config_digest']);
    expect({ ...is, format: 'awaken-transcript/5', plugins: was['plugins'], config_digest: was['config_digest'] }).toEqual(was);
    // Nothing to write differently: a header without plugins keeps its digest.
    const plain = v5old('03-one-tool.jsonl');
    expect(migrateTranscript(plain)).toBe(
      plain.replace('{"type":"header","format":"awaken-transcript/5",', '{"type":"header","format":"awaken-transcript/12",'),
    );
  });

  it('format 5 → 10: the owner of a served run is kept', () => {
    const before = v5old('03-one-tool.jsonl').replace('"request":{"agent_id"', '"request":{"thread_id":"t","run_id":"r","owner":"alice","agent_id"');
    expect(JSON.parse(migrateTranscript(before).split('\n')[0] as string)).toMatchObject({
      format: 'awaken-transcript/12',
      request: { thread_id: 't', run_id: 'r', owner: 'alice' },
    });
  });

  it('format 5 → 10: a header that does not match its config_digest is refused, naming line 1; so is one whose plugins are not ids', async () => {
    const edited = v5old('28-blocked-by-gate.jsonl').replace('"plugins":["tool-gate"]', '"plugins":["finish-on"]');
    expect(() => migrateTranscript(edited)).toThrow(new MigrationFailure(1, 'the header does not match its config_digest'));
    expect(await replayTranscript(edited)).toMatchObject({ identical: false, divergence: { port: 'transcript', line: 1 }, at: { line: 1, record: 'header' } });
    const header = JSON.parse(v5old('28-blocked-by-gate.jsonl').split('\n')[0] as string) as Record<string, unknown>;
    header['plugins'] = [{ id: 'tool-gate' }];
    header['config_digest'] = configDigest(header as unknown as Header);
    const objects = [JSON.stringify(header), ...v5old('28-blocked-by-gate.jsonl').split('\n').slice(1)].join('\n');
    expect(() => migrateTranscript(objects)).toThrow(new MigrationFailure(1, 'plugins[0]: not a plugin id'));
  });

  it.each(sixes)(
    'format 6 → 10: %s migrates to the corpus run — its tag alone changes, every other byte kept — and replays identical as it is',
    async (file) => {
      const before = v6old(file);
      expect(before.startsWith('{"type":"header","format":"awaken-transcript/6",')).toBe(true);
      const after = migrateTranscript(before);
      expect(after).toBe(v2(file));
      expect(after).toBe(before.replace('{"type":"header","format":"awaken-transcript/6",', '{"type":"header","format":"awaken-transcript/12",'));
      expect(await replayTranscript(before)).toMatchObject({ identical: true });
    },
  );

  it('format 6 → 10: an app plugin entry, an owner and an app are kept as they were (the config digest does not cover the tag)', () => {
    const header = JSON.parse(v6old('28-blocked-by-gate.jsonl').split('\n')[0] as string) as Record<string, unknown>;
    const request = header['request'] as Record<string, unknown>;
    const edited: Record<string, unknown> = {
      ...header,
      plugins: [{ id: 'tagger', factory: 'tagger', config: { label: 'x', api_key: '<redacted>' } }],
      app: { file: 'app.ts', version: 'v1' },
      request: { thread_id: 't', run_id: 'r', owner: 'alice', ...request },
    };
    edited['config_digest'] = configDigest(edited as unknown as Header);
    const before = [JSON.stringify(edited), ...v6old('28-blocked-by-gate.jsonl').split('\n').slice(1)].join('\n');
    expect(migrateTranscript(before)).toBe(before.replace('"format":"awaken-transcript/6"', '"format":"awaken-transcript/12"'));
  });

  it('format 6 → 10: what only format 7 writes is refused, naming its line — a segment, a run state, a decision or cancel before any event, an ask record', async () => {
    const text = v6old('11-suspension-resumed-replay-tool-call.jsonl');
    const [head, ...rest] = text.split('\n');
    const header = JSON.parse(head as string) as Record<string, unknown> & { request: Record<string, unknown> };
    const withHeader = (h: object): string => [JSON.stringify(h), ...rest].join('\n');
    expect(() => migrateTranscript(withHeader({ ...header, segment: 2 }))).toThrow(
      new MigrationFailure(1, 'segment: a format-6 header has none (it is format 7)'),
    );
    expect(() => migrateTranscript(withHeader({ ...header, request: { ...header.request, run_state: { revision: 1, extensions: {} } } }))).toThrow(
      new MigrationFailure(1, 'request.run_state: a format-6 header has none (it is format 7)'),
    );
    const at = rest.findIndex((l) => l.startsWith('{"type":"decision"')) + 2;
    const early = text.replace(/\{"type":"decision","after_event":\d+,/, '{"type":"decision","after_event":0,');
    expect(() => migrateTranscript(early)).toThrow(new MigrationFailure(at, 'after_event 0: a format-6 decision or cancel comes after an event'));
    expect(await replayTranscript(early)).toMatchObject({ identical: false, divergence: { port: 'transcript', line: at } });
    const asked = [head, '{"type":"ask","call_id":"c1","name":"approve","arguments":{},"ticket":null}', ...rest].join('\n');
    expect(() => migrateTranscript(asked)).toThrow(new MigrationFailure(2, 'an ask record: format 6 has none (it is format 7)'));
  });

  it.each(sevens)(
    'format 7 → 10: %s migrates to the corpus run — its tag alone changes, every other byte kept — and replays identical as it is',
    async (file) => {
      const before = v7old(file);
      expect(before.startsWith('{"type":"header","format":"awaken-transcript/7",')).toBe(true);
      const after = migrateTranscript(before);
      expect(after).toBe(v2(file));
      expect(after).toBe(before.replace('{"type":"header","format":"awaken-transcript/7",', '{"type":"header","format":"awaken-transcript/12",'));
      expect(await replayTranscript(before)).toMatchObject({ identical: true });
    },
  );

  it('format 6 or 7 → 10: a response_metadata part, which only format 8 writes, is refused naming its line; a message saying it is not', async () => {
    const part = '{"type":"response_metadata","id":"chatcmpl-1","model":"m-0001"}';
    for (const text of [v7old('01-plain-answer.jsonl'), v6old('03-one-tool.jsonl')]) {
      const from = text.startsWith('{"type":"header","format":"awaken-transcript/7"') ? 7 : 6;
      const lines = text.split('\n');
      const at = lines.findIndex((l) => l.startsWith('{"type":"llm"'));
      const described = lines.map((l, i) => (i === at ? l.replace('"parts":[', `"parts":[${part},`) : l)).join('\n');
      expect(() => migrateTranscript(described)).toThrow(new MigrationFailure(at + 1, `a response_metadata part: format ${from} has none (it is format 8)`));
      expect(await replayTranscript(described)).toMatchObject({ identical: false, divergence: { port: 'transcript', line: at + 1 } });
    }
    // The same words in a message the model was sent are a string's (their quotes escaped), not a part.
    const text = v7old('01-plain-answer.jsonl');
    const lines = text.split('\n');
    const at = lines.findIndex((l) => l.startsWith('{"type":"llm"'));
    const quoting = lines.map((l, i) => (i === at ? l.replace('"text":"', `"text":"${JSON.stringify(part).slice(1, -1)}`) : l)).join('\n');
    expect(quoting.split('\n')[at]).toContain('\\"type\\":\\"response_metadata\\"');
    expect(migrateTranscript(quoting)).toBe(quoting.replace('"format":"awaken-transcript/7"', '"format":"awaken-transcript/12"'));
  });

  it.each(eights)(
    'format 8 → 10: %s migrates to the corpus run — its tag alone changes, every other byte kept — and replays identical as it is',
    async (file) => {
      const before = v8old(file);
      expect(before.startsWith('{"type":"header","format":"awaken-transcript/8",')).toBe(true);
      const after = migrateTranscript(before);
      expect(after).toBe(v2(file));
      expect(after).toBe(before.replace('{"type":"header","format":"awaken-transcript/8",', '{"type":"header","format":"awaken-transcript/12",'));
      expect(await replayTranscript(before)).toMatchObject({ identical: true });
    },
  );

  it('format 8 → 10: a response_metadata part, which format 8 writes, is kept as it is', () => {
    const text = v8old('01-plain-answer.jsonl');
    const part = '{"type":"response_metadata","id":"chatcmpl-1","model":"m-0001"}';
    const described = text.replace(/^(\{"type":"llm".*?"parts":\[)/m, `$1${part},`);
    expect(described).not.toBe(text);
    expect(migrateTranscript(described)).toBe(described.replace('"format":"awaken-transcript/8"', '"format":"awaken-transcript/12"'));
  });

  it('any format before 9 → 10: a tool error unavailable_before_dispatch, which only format 9 writes, is refused naming its line; the same words in data are not', async () => {
    const unavailable = '"tool_error":{"code":"unavailable_before_dispatch","message":"the queue was closed"}';
    for (const [from, text] of [
      [8, v8old('09-tool-invalid-arguments.jsonl')],
      [7, v7old('29-gate-ask-resumed.jsonl')],
      [6, v6old('03-one-tool.jsonl')],
      [5, v5old('03-one-tool.jsonl')],
      [3, v3old('11-suspension-resumed-replay-tool-call.jsonl')],
      [1, v1('11-suspension-resumed-replay-tool-call.jsonl')],
    ] as const) {
      const lines = text.split('\n');
      const at = lines.findIndex((l) => l.startsWith('{"type":"tool"'));
      expect(at).toBeGreaterThan(0);
      const retried = lines
        .map((l, i) => (i === at ? l.replace(/"activity":\[\],"(result|tool_error)":.*\}$/, `"activity":[],${unavailable}}`) : l))
        .join('\n');
      expect(retried.split('\n')[at]).toContain(unavailable);
      expect(() => migrateTranscript(retried)).toThrow(
        new MigrationFailure(at + 1, `a tool error unavailable_before_dispatch: format ${from} has none (it is format 9)`),
      );
      expect(await replayTranscript(retried)).toMatchObject({ identical: false, divergence: { port: 'transcript', line: at + 1 } });
    }
    // A tool's arguments that happen to hold the words are data, not a tool error.
    const text = v8old('09-tool-invalid-arguments.jsonl');
    const quoting = text.replace('"arguments":{"text":42}', `"arguments":{"text":42,${unavailable}}`);
    expect(quoting).not.toBe(text);
    expect(migrateTranscript(quoting)).toBe(quoting.replace('"format":"awaken-transcript/8"', '"format":"awaken-transcript/12"'));
  });

  it.each(nines)(
    'format 9 → 10: %s migrates to the corpus run — its tag alone changes, every other byte kept — and replays identical as it is',
    async (file) => {
      const before = v9old(file);
      expect(before.startsWith('{"type":"header","format":"awaken-transcript/9",')).toBe(true);
      const after = migrateTranscript(before);
      expect(after).toBe(v2(file));
      expect(after).toBe(before.replace('{"type":"header","format":"awaken-transcript/9",', '{"type":"header","format":"awaken-transcript/12",'));
      expect(await replayTranscript(before)).toMatchObject({ identical: true });
    },
  );

  it('format 9 → 10: a tool error unavailable_before_dispatch, which format 9 writes, is kept as it is', () => {
    const text = v9old('29-gate-ask-resumed.jsonl');
    const lines = text.split('\n');
    const at = lines.findIndex((l) => l.startsWith('{"type":"tool"'));
    expect(at).toBeGreaterThan(0);
    const retried = lines
      .map((l, i) =>
        i === at
          ? l.replace(/"activity":\[\],"(result|tool_error)":.*\}$/, '"activity":[],"tool_error":{"code":"unavailable_before_dispatch","message":"closed"}}')
          : l,
      )
      .join('\n');
    expect(retried).not.toBe(text);
    expect(migrateTranscript(retried)).toBe(retried.replace('"format":"awaken-transcript/9"', '"format":"awaken-transcript/12"'));
  });

  it('any older format → 10: a request with the client’s tools, state or context, which only format 10 writes, is refused naming line 1; the same words in a message are not', async () => {
    const client = {
      client_tools: [{ id: 'pick_color', name: 'pick_color', description: 'Pick a colour', parameters: { type: 'object' } }],
      client_state: { theme: 'dark' },
      client_context: [{ description: 'page', value: 'checkout' }],
    };
    for (const [from, text] of [
      [9, v9old('12-suspension-resumed-use-decision-as-tool-result.jsonl')],
      [8, v8old('01-plain-answer.jsonl')],
      [7, v7old('29-gate-ask-resumed.jsonl')],
      [6, v6old('03-one-tool.jsonl')],
      [5, v5old('03-one-tool.jsonl')],
      [4, v4old('03-one-tool.jsonl')],
      [3, v3old('11-suspension-resumed-replay-tool-call.jsonl')],
      [2, v2old('11-suspension-resumed-replay-tool-call.jsonl')],
      [1, v1('11-suspension-resumed-replay-tool-call.jsonl')],
    ] as const) {
      const [head, ...rest] = text.split('\n');
      const header = JSON.parse(head as string) as Record<string, unknown> & { request: Record<string, unknown> };
      for (const [field, value] of Object.entries(client)) {
        const edited = [JSON.stringify({ ...header, request: { ...header.request, [field]: value } }), ...rest].join('\n');
        expect(() => migrateTranscript(edited)).toThrow(new MigrationFailure(1, `request.${field}: a format-${from} header has none (it is format 10)`));
        expect(await replayTranscript(edited)).toMatchObject({
          identical: false,
          divergence: { port: 'transcript', line: 1, message: expect.stringContaining(`cannot migrate this awaken-transcript/${from} transcript`) },
          at: { line: 1, record: 'header' },
        });
      }
    }
    // A message that names the fields is the message's text, not a field of the request.
    const text = v9old('01-plain-answer.jsonl');
    const quoting = text.replace('"text":"scenario: plain-answer"', '"text":"scenario: plain-answer \\"client_tools\\":[] client_state client_context"');
    expect(quoting).not.toBe(text);
    expect(migrateTranscript(quoting)).toBe(quoting.replace('"format":"awaken-transcript/9"', '"format":"awaken-transcript/12"'));
  });

  it.each(tens)('format 10 → 11: %s migrates to the corpus run and replays identical as it is', async (file) => {
    const before = v10old(file);
    expect(before.startsWith('{"type":"header","format":"awaken-transcript/10",')).toBe(true);
    const after = migrateTranscript(before);
    expect(after).toBe(v2(file));
    // Every line after the header is kept byte for byte.
    expect(after.slice(after.indexOf('\n'))).toBe(before.slice(before.indexOf('\n')));
    expect(await replayTranscript(before)).toMatchObject({ identical: true });
  });

  it('format 10 → 11: an agent with generative-ui and no A2UI version gains version v0.8 in its section, under a recomputed digest; any other header only its tag', () => {
    const before = v10old('43-a2ui-render.jsonl');
    const header = (text: string): Header => JSON.parse(text.slice(0, text.indexOf('\n'))) as Header;
    const old = header(before);
    const now = header(migrateTranscript(before));
    expect(old.agent.sections).toEqual({});
    expect(now.agent.sections).toEqual({ 'generative-ui': { version: 'v0.8' } });
    expect(now.config_digest).toBe(configDigest(now));
    expect({ ...now, format: old.format, config_digest: old.config_digest, agent: old.agent }).toEqual(old);
    // A section with other settings keeps them; a plain run changes only its tag.
    const [head, ...rest] = before.split('\n');
    const withSection = { ...old, agent: { ...old.agent, sections: { 'generative-ui': { catalog_id: 'mine' } } } };
    const edited = [JSON.stringify({ ...withSection, config_digest: configDigest(withSection as Header) }), ...rest].join('\n');
    expect(header(migrateTranscript(edited)).agent.sections).toEqual({ 'generative-ui': { catalog_id: 'mine', version: 'v0.8' } });
    expect(head).toBeDefined();
    const plain = v10old('01-plain-answer.jsonl');
    expect(migrateTranscript(plain)).toBe(
      plain.replace('{"type":"header","format":"awaken-transcript/10",', '{"type":"header","format":"awaken-transcript/12",'),
    );
    // A header that does not match its digest is refused before anything is written into it.
    const tampered = before.replace('"system_prompt":"You are the corpus agent."', '"system_prompt":"You are another agent."');
    expect(() => migrateTranscript(tampered)).toThrow(new MigrationFailure(1, 'the header does not match its config_digest'));
  });

  it.each(elevens)('format 11 → 12: %s migrates to the corpus run, its tag alone, and replays identical as it is', async (file) => {
    const before = v11old(file);
    expect(before.startsWith('{"type":"header","format":"awaken-transcript/11",')).toBe(true);
    const after = migrateTranscript(before);
    expect(after).toBe(v2(file));
    expect(after).toBe(before.replace('{"type":"header","format":"awaken-transcript/11",', '{"type":"header","format":"awaken-transcript/12",'));
    expect(await replayTranscript(before)).toMatchObject({ identical: true, migratedFrom: 'awaken-transcript/11' });
  });

  it('any older format → 12: a header with fork, which only format 12 writes, is refused naming line 1; the word in a message is not', () => {
    for (const before of [v11old('01-plain-answer.jsonl'), v10old('01-plain-answer.jsonl')]) {
      const [head, ...rest] = before.split('\n');
      const forked = [
        JSON.stringify({ ...(JSON.parse(head as string) as object), fork: { parent: 'a.jsonl', parent_digest: 'sha256:0', at_step: 1 } }),
        ...rest,
      ].join('\n');
      const format = (JSON.parse(head as string) as { format: string }).format.split('/')[1];
      expect(() => migrateTranscript(forked)).toThrow(new MigrationFailure(1, `fork: a format-${format} header has none (it is format 12)`));
    }
    const worded = v11old('01-plain-answer.jsonl').replace('"system_prompt":"You are the corpus agent."', '"system_prompt":"fork"');
    expect(() => migrateTranscript(worded)).not.toThrow();
  });

  it('property: an older transcript with any one leaf edited is reported or migrated, never a throw', async () => {
    const olders = [
      ...olds.map((f) => v1(f)),
      ...twos.map((f) => v2old(f)),
      ...threes.map((f) => v3old(f)),
      ...fours.map((f) => v4old(f)),
      ...fives.map((f) => v5old(f)),
      ...sixes.map((f) => v6old(f)),
      ...sevens.map((f) => v7old(f)),
      ...eights.map((f) => v8old(f)),
      ...nines.map((f) => v9old(f)),
      ...tens.map((f) => v10old(f)),
      ...elevens.map((f) => v11old(f)),
    ].map((t) => t.trimEnd().split('\n'));
    type Path = (string | number)[];
    const leaves = (v: unknown, path: Path = []): Path[] =>
      Array.isArray(v)
        ? v.flatMap((x, i) => leaves(x, [...path, i]))
        : v !== null && typeof v === 'object'
          ? Object.entries(v).flatMap(([k, x]) => leaves(x, [...path, k]))
          : [path];
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: olders.length - 1 }),
        fc.nat(),
        fc.nat(),
        fc.constantFrom<unknown>('x', -1, true, null, [], {}),
        async (t, line, leaf, value) => {
          const lines = olders[t] as string[];
          const i = line % lines.length;
          const record = JSON.parse(lines[i] as string) as Record<string, unknown>;
          const paths = leaves(record);
          const path = paths[leaf % paths.length] as Path;
          let parent = record as Record<string | number, unknown>;
          for (const k of path.slice(0, -1)) parent = parent[k] as Record<string | number, unknown>;
          const key = path.at(-1);
          fc.pre(key !== undefined && JSON.stringify(parent[key]) !== JSON.stringify(value));
          parent[key as string | number] = value;
          const report = await replayTranscript(`${lines.map((l, j) => (j === i ? JSON.stringify(record) : l)).join('\n')}\n`);
          expect(typeof report.identical).toBe('boolean');
          if (!report.identical) expect(report.divergence ?? report.firstDifference).toBeDefined();
        },
      ),
      { numRuns: 400 },
    );
  });

  it('an older record of an unexpected shape is a migration failure naming its line, never a throw', async () => {
    const text = v1('11-suspension-resumed-replay-tool-call.jsonl');
    const at = (needle: string): number => text.split('\n').findIndex((l) => l.includes(needle)) + 1;
    const decisions = text.replace(/"decisions":\[.*\]\}$/m, '"decisions":-1}');
    expect(await replayTranscript(decisions)).toMatchObject({
      identical: false,
      divergence: { port: 'transcript', line: at('"type":"decision"') },
      at: { record: 'decision' },
    });
    const bare = text.replace(/^\{"type":"env".*$/m, 'null');
    expect(await replayTranscript(bare)).toMatchObject({
      identical: false,
      divergence: { port: 'transcript', message: expect.stringContaining('line 2: not a record'), line: 2 },
    });
  });

  it('a format-3 transcript without its end record is a divergence at its end', async () => {
    const text = withoutThread(v2('03-one-tool.jsonl'));
    const report = await replayTranscript(text);
    expect(report.identical).toBe(false);
    expect(report.divergence).toMatchObject({ port: 'end', message: 'the transcript has no end record (the result and the messages the run ended with)' });
    // Where the end record would be: after the last line.
    expect(report.at).toEqual({ line: text.trimEnd().split('\n').length + 1, record: 'end' });
  });
});
