import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { serialiseEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { TranscriptLog } from '../../src/replay/recorder.ts';
import { type Mismatch, StrictLog } from '../../src/replay/strict-log.ts';
import { chainDigest, chainDigestIn, parseRecord, RequestChain, type RequestDelta, TRANSCRIPT_FORMAT } from '../../src/replay/transcript.ts';

/**
 * How a record becomes its line without the schema where the answer is known — an env draw built
 * from its fields, a replayed record that writes exactly the canonical line it replays — and that
 * the line is always the one the schema writes, and refused where the schema refuses.
 */

/** The line the schema writes for a record, or the error recording throws for it. */
function bySchema(record: object): { line: string } | { error: string } {
  const parsed = parseRecord(record);
  return parsed.success
    ? { line: JSON.stringify(parsed.data) }
    : { error: `recorder: invalid ${String((record as { type?: unknown }).type)} record: ${parsed.error.message}` };
}

function written(log: TranscriptLog, record: object): { line: string } | { error: string } {
  try {
    log.push(record);
    return { line: log.lines.at(-1) as string };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

const value = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, 1e21, 1.5e-7, 1700000000000, Number.NaN, Number.POSITIVE_INFINITY),
  fc.string(),
  fc.constant(undefined),
  fc.constant(null),
);
/** Env records as a recording env builds them, and as nobody should: other draws, wrong types, extra keys. */
const envRecord = fc
  .record(
    {
      draw: fc.constantFrom('now', 'random', 'id', 'sleep', 'other'),
      value,
      kind: fc.oneof(fc.string(), fc.constant(3)),
      ms: value,
      extra: fc.jsonValue(),
    },
    { requiredKeys: ['draw'] },
  )
  .map((r) => ({ type: 'env', ...r }));

describe('writing a record line', () => {
  it('property: an env record is written as the schema writes it, and refused as the schema refuses it', () => {
    fc.assert(
      fc.property(envRecord, (record) => {
        expect(written(new TranscriptLog(), record)).toEqual(bySchema(record));
      }),
      { numRuns: 2_000 },
    );
  });

  it("writes an array as the schema does (refused), though its fields are an env draw's", () => {
    const array = Object.assign([], { type: 'env', draw: 'now', value: 1 });
    expect(written(new TranscriptLog(), array)).toEqual(bySchema(array));
    expect(written(new TranscriptLog(), array)).toHaveProperty('error');
  });

  it('refuses a draw that is no finite number, naming the record', () => {
    expect(written(new TranscriptLog(), { type: 'env', draw: 'now', value: Number.NaN })).toEqual(bySchema({ type: 'env', draw: 'now', value: Number.NaN }));
    expect(() => new TranscriptLog().push({ type: 'env', draw: 'sleep', ms: Number.POSITIVE_INFINITY })).toThrow(/^recorder: invalid env record: /);
  });
});

describe('the header’s seed', () => {
  const header = {
    type: 'header',
    format: TRANSCRIPT_FORMAT,
    config_digest: 'sha256:0',
    agent: { id: 'a', model: 'm' },
    models: { m: { provider: 'p', model_name: 'pm' } },
    tools: [],
    plugins: [],
    stop_policies: [],
    env: { kind: 'deterministic', start: 1_700_000_000_000, seed: 7, tick: 0 },
    request: { agent_id: 'a', messages: [Messages.user('go')] },
  };

  it('property: kept exactly when a random number was written, whatever else the run drew or was refused', () => {
    fc.assert(
      fc.property(fc.array(envRecord, { maxLength: 12 }), (records) => {
        const log = new TranscriptLog();
        log.push(header);
        for (const r of records) written(log, r);
        log.dropInertSeed();
        const drew = log.lines.slice(1).some((l) => l.startsWith('{"type":"env","draw":"random"'));
        expect((JSON.parse(log.lines[0] as string) as { env: { seed?: number } }).env.seed).toBe(drew ? 7 : undefined);
      }),
      { numRuns: 1_000 },
    );
  });
});

/** Parts as providers yield them: canonical, keys out of order, extra keys, a field hidden, and parts the schema refuses. */
const part = fc.oneof(
  fc.string().map((delta) => ({ type: 'text_delta', delta })),
  fc.string().map((delta) => ({ delta, type: 'reasoning_delta' })),
  fc.record({ type: fc.constant('tool_call_start'), name: fc.string(), id: fc.string(), extra: fc.jsonValue() }),
  fc.record({ type: fc.constant('tool_call_ready'), id: fc.string(), name: fc.string(), arguments: fc.jsonValue() }),
  fc.record({
    type: fc.constant('finish'),
    stop_reason: fc.constantFrom('EndTurn', 'ToolUse', 'Sideways'),
    has_incomplete_tool_calls: fc.option(fc.boolean(), { nil: undefined }),
  }),
  fc.record({ type: fc.constant('usage'), usage: fc.record({ prompt_tokens: fc.integer({ min: -1, max: 9 }) }, { requiredKeys: [] }) }),
  fc.string().map((delta) => Object.defineProperty({ type: 'text_delta' }, 'delta', { value: delta, enumerable: false })),
  fc.constantFrom({ type: 'text_delta', delta: 3 }, { type: 'nothing' }, null),
);
const inferenceError = fc.option(
  fc.oneof(
    fc.record({ code: fc.constantFrom('provider', 'timeout', 'rate_limited'), message: fc.string() }),
    fc.record({ message: fc.string(), code: fc.constant('provider') }),
    fc.constant({ code: 'cancelled', message: 'extra' }),
    fc.constantFrom({ code: 'nope' }, 'provider', 7),
  ),
  { nil: undefined },
);
const llmRecord = fc.record({
  seq: fc.oneof(fc.integer({ min: 1, max: 9 }), fc.constantFrom(0, 1.5, Number.NaN)),
  digest: fc.oneof(fc.string(), fc.constant(3)),
  parts: fc.array(part, { maxLength: 4 }),
  error: inferenceError,
  interrupted: fc.constantFrom(undefined, true, false, 'true'),
});
/** What may happen to a change between the chain giving it and its record being written. */
type Afterwards = 'nothing' | 'arguments-changed' | 'arguments-not-json' | 'model-not-string' | 'a-copy';
/**
 * A request's change as a chain gives it: messages with tool calls among them, seen in part at an
 * earlier request or not, sometimes for a model that is no string; then, sometimes, a tool call's
 * arguments (the caller's object) changed in place, to other JSON or to something that is not, or
 * the change copied (not the chain's own).
 */
const requested = fc
  .record({
    texts: fc.array(fc.string({ maxLength: 5 }), { minLength: 1, maxLength: 4 }),
    before: fc.nat({ max: 3 }),
    afterwards: fc.constantFrom<Afterwards>('nothing', 'nothing', 'arguments-changed', 'arguments-not-json', 'model-not-string', 'a-copy'),
  })
  .map(({ texts, before, afterwards }) => {
    const chain = new RequestChain();
    const args = texts.map((t) => ({ text: t }));
    const messages = texts.map((t, i) =>
      i % 2 === 1 ? Messages.assistantWithToolCalls(t, [{ id: `c${i}`, name: 'echo', arguments: args[i] as { text: string } }]) : Messages.user(t),
    );
    const tools = [{ id: 'echo', name: 'echo', description: 'echo', parameters: { type: 'object' } }];
    if (before > 0) chain.next({ model: 'm', messages: messages.slice(0, before), tools });
    // A model that is no string reaches the chain only against the request's type (a transform's cast, say).
    const model = (afterwards === 'model-not-string' ? 5 : 'm') as string;
    const { delta } = chain.next({ model, messages, tools, ...(before === 2 ? { overrides: { temperature: 0.5 } } : {}) });
    const changed = args[1];
    if (afterwards === 'arguments-changed' && changed !== undefined) changed.text = 'changed since';
    if (afterwards === 'arguments-not-json' && changed !== undefined) (changed as Record<string, unknown>).text = undefined;
    // A copy in another key order, with a key the schema does not know.
    return afterwards === 'a-copy' ? Object.assign({ kept: delta.kept }, delta, { note: 'a copy' }) : delta;
  });

describe('writing an llm record', () => {
  const recordOf = ({ error, interrupted, ...rest }: typeof llmRecord extends fc.Arbitrary<infer T> ? T : never, request: object) => ({
    type: 'llm',
    ...rest,
    request,
    ...(error !== undefined ? { error } : {}),
    ...(interrupted !== undefined ? { interrupted } : {}),
  });

  it('property: its line, built around the change its chain gave, is the line the schema writes; refused as the schema refuses it', () => {
    fc.assert(
      fc.property(llmRecord, requested, (fields, request) => {
        const record = recordOf(fields, request);
        expect(written(new TranscriptLog(), record)).toEqual(bySchema(record));
      }),
      { numRuns: 3_000 },
    );
  });

  it('property: a replay writes the recorded line for a record that is it, and reports any other at its line', () => {
    fc.assert(
      fc.property(llmRecord, llmRecord, requested, (recordedFields, replayedFields, request) => {
        const recorded = bySchema(recordOf(recordedFields, request));
        fc.pre('line' in recorded);
        const line = (recorded as { line: string }).line;
        // The same record again, and one drawn at random (mostly another).
        for (const replayed of [recordOf(recordedFields, request), recordOf(replayedFields, request)]) {
          const { log, mismatches } = replayOver(line, true);
          const out = written(log, replayed);
          expect(out).toEqual(bySchema(replayed));
          if ('error' in out) continue;
          expect(mismatches).toEqual(out.line === line ? [] : [{ line: 2, recorded: line, replayed: out.line }]);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('writes through the schema a replayed record whose parts array writes itself as other JSON (toJSON), and reports it', () => {
    const { delta } = new RequestChain().next({ model: 'm', messages: [Messages.user('go')], tools: [] });
    const record = { type: 'llm', seq: 1, digest: 'sha256:0', request: delta, parts: [{ type: 'finish', stop_reason: 'EndTurn' }] };
    const line = (bySchema(record) as { line: string }).line;
    const posing = [{ type: 'text_delta', delta: 'else' }];
    for (const parts of [
      Object.assign([...posing], { toJSON: () => record.parts }),
      Object.setPrototypeOf([...posing], Object.assign(Object.create(Array.prototype), { toJSON: () => record.parts })),
    ]) {
      expect(JSON.stringify({ ...record, parts })).toBe(line);
      const { log, mismatches } = replayOver(line, true);
      log.push({ ...record, parts });
      const replayed = (bySchema({ ...record, parts: posing }) as { line: string }).line;
      expect(log.lines[1]).toBe(replayed);
      expect(mismatches).toEqual([{ line: 2, recorded: line, replayed }]);
    }
  });

  it('writes through the schema a replayed record with a field its JSON does not show, and reports it', () => {
    const { delta } = new RequestChain().next({ model: 'm', messages: [Messages.user('go')], tools: [] });
    const record = { type: 'llm', seq: 1, digest: 'sha256:0', request: delta, parts: [{ type: 'finish', stop_reason: 'EndTurn' }] };
    const line = (bySchema(record) as { line: string }).line;
    const hidden = Object.defineProperty({ type: 'finish', stop_reason: 'EndTurn' }, 'has_incomplete_tool_calls', { value: true, enumerable: false });
    const { log, mismatches } = replayOver(line, true);
    log.push({ ...record, parts: [hidden] });
    const replayed = (bySchema({ ...record, parts: [{ type: 'finish', stop_reason: 'EndTurn', has_incomplete_tool_calls: true }] }) as { line: string }).line;
    expect(log.lines[1]).toBe(replayed);
    expect(mismatches).toEqual([{ line: 2, recorded: line, replayed }]);
  });
});

const call = { type: 'tool', call_id: 'c1', name: 'echo', arguments: { text: 'hi' }, activity: [] };
/** A tool record's canonical line, as recording writes it. */
function canonicalLine(record: object): string {
  const log = new TranscriptLog();
  log.push(record);
  return log.lines[0] as string;
}

/** A strict log over a header and one recorded line; what it reports. */
function replayOver(recorded: string, trusted: boolean): { log: StrictLog; mismatches: Mismatch[] } {
  const mismatches: Mismatch[] = [];
  const log = new StrictLog(
    [
      { line: 1, text: '{"type":"header"}' },
      { line: 2, text: recorded, trusted },
    ],
    (m) => mismatches.push(m),
  );
  return { log, mismatches };
}

describe('writing an event line', () => {
  it('writes the JSON its caller already made of the event, and makes it when not given', () => {
    const log = new TranscriptLog();
    const event = { event_type: 'text_delta', delta: 'hi' } as const;
    // A replay serialises each event once, to compare it, and writes that same text.
    log.event(event, '{"event_type":"text_delta","delta":"as given"}');
    log.event(event);
    expect(log.lines).toEqual([
      '{"type":"event","seq":0,"event":{"event_type":"text_delta","delta":"as given"}}',
      `{"type":"event","seq":1,"event":${serialiseEvent(event)}}`,
    ]);
  });
});

describe('a replay writes the line it replays when its record is that line', () => {
  const result = { tool_name: 'echo', status: 'success', data: { at: '1970-01-01T00:00:00.000Z' }, message: null };

  it('takes a record whose JSON is the canonical line it replays as that line', () => {
    const line = canonicalLine({ ...call, result });
    const { log, mismatches } = replayOver(line, true);
    log.push({ ...call, result });
    expect(log.lines).toEqual(['{"type":"header"}', line]);
    expect(mismatches).toEqual([]);
  });

  it('writes through the schema a record whose JSON equals a line not known canonical: the difference is reported', () => {
    // `extra` is dropped by the schema: the line with it is not what recording writes.
    const edited = JSON.stringify({ ...call, result, extra: 1 });
    const { log, mismatches } = replayOver(edited, false);
    log.push({ ...call, result, extra: 1 });
    const canonical = canonicalLine({ ...call, result });
    expect(log.lines[1]).toBe(canonical);
    expect(mismatches).toEqual([{ line: 2, recorded: edited, replayed: canonical }]);
  });

  it('writes through the schema a record with a field its JSON does not show (not enumerable)', () => {
    const line = canonicalLine(call);
    const { log, mismatches } = replayOver(line, true);
    const hidden = Object.defineProperty({ ...call }, 'thrown', { value: 'boom', enumerable: false });
    expect(JSON.stringify(hidden)).toBe(line);
    log.push(hidden);
    expect(log.lines[1]).toBe(canonicalLine({ ...call, thrown: 'boom' }));
    expect(mismatches).toEqual([{ line: 2, recorded: line, replayed: canonicalLine({ ...call, thrown: 'boom' }) }]);
    // Deeper down, in a result: the schema refuses it, as recording would.
    const deep = canonicalLine({ ...call, result });
    const refused = { ...call, result: Object.defineProperty({ ...result }, 'status', { value: 'bogus', enumerable: false }) };
    expect(() => replayOver(deep, true).log.push(refused)).toThrow(/^recorder: invalid tool record: /);
  });

  it('refuses, as recording does, a record that only writes as the line (a Date where JSON is due)', () => {
    const line = canonicalLine({ ...call, result });
    const { log } = replayOver(line, true);
    const dated = { ...call, result: { ...result, data: { at: new Date(0) } } };
    expect(JSON.stringify(dated)).toBe(line);
    expect(() => log.push(dated)).toThrow(/^recorder: invalid tool record: /);
  });
});

describe('request digests taken once for a replay', () => {
  const delta = fc.record({
    model: fc.string(),
    kept: fc.nat(),
    messages: fc.array(
      fc.string().map((t) => Messages.user(t)),
      { maxLength: 3 },
    ),
  }) as fc.Arbitrary<RequestDelta>;
  const previous = fc.option(fc.string().map((s) => `sha256:${s}`));

  it('property: a digest kept in a memo is the digest, and a second ask of the same text is answered from it', () => {
    fc.assert(
      fc.property(previous, delta, previous, (p, d, other) => {
        const memo = new Map<string, string>();
        expect(chainDigestIn(memo, p, d)).toBe(chainDigest(p, d));
        expect(chainDigestIn(memo, p, structuredClone(d))).toBe(chainDigest(p, d));
        expect(memo.size).toBe(1);
        expect(chainDigestIn(memo, other, d)).toBe(chainDigest(other, d));
        expect(memo.size).toBe(other === p ? 1 : 2);
      }),
      { numRuns: 300 },
    );
  });

  it('gives a chain with a memo the digests a chain without one gives', () => {
    const memo = new Map<string, string>();
    const [plain, memoised] = [new RequestChain(), new RequestChain(memo)];
    const history = [Messages.user('a')];
    for (let i = 0; i < 4; i++) {
      const request = { model: 'm', messages: [...history], tools: [] };
      expect(memoised.next(request)).toEqual(plain.next(request));
      history.push(Messages.assistant(`r${i}`), Messages.user(`q${i}`));
    }
    expect(memo.size).toBe(4);
  });
});
