import { ArgsParser } from '@copilotkit/shared/event-transforms';
import fc from 'fast-check';
import jsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/contract/json.ts';
import type { AgUiEvent } from '../../src/protocols/ag-ui/encoder.ts';
import {
  finishOpenGenerativeUi,
  initialOpenGenerativeUiState,
  openGenerativeUiEvents,
  transformOpenGenerativeUi,
} from '../../src/protocols/ag-ui/open-generative-ui.ts';

/**
 * The Open Generative UI transform (seed 001 §9.12) against CopilotKit's own `ArgsParser`
 * (`@copilotkit/shared`, the parser of its `OpenGenerativeUIMiddleware`): for any arguments, the
 * activity events are the parser's for those arguments written in the tool's order; one snapshot,
 * before any delta; every `add` carries a value; the patched content has `html` as an array.
 */

const ORDER = ['initialHeight', 'placeholderMessages', 'css', 'html', 'jsFunctions', 'jsExpressions'] as const;

/** What CopilotKit's parser emits for the arguments, written whole in the tool's order, then the end mark. */
function upstream(callId: string, args: Record<string, JsonValue>): unknown[] {
  const events: unknown[] = [];
  const parser = new ArgsParser(callId, (e: unknown) => events.push(e));
  const ordered = Object.fromEntries(ORDER.filter((k) => Object.hasOwn(args, k)).map((k) => [k, args[k] as JsonValue]));
  parser.write(JSON.stringify(ordered));
  // The middleware's own end mark (sent at TOOL_CALL_END), after the snapshot the parser made if any.
  events.push({
    type: 'ACTIVITY_DELTA',
    messageId: `${callId}-activity`,
    activityType: 'open-generative-ui',
    patch: [{ op: 'add', path: '/generating', value: false }],
  });
  return events;
}

const argsArb = fc.record(
  {
    initialHeight: fc.oneof(fc.integer({ min: 0, max: 2000 }), fc.constant(null)),
    placeholderMessages: fc.array(fc.string({ maxLength: 12 }), { maxLength: 3 }),
    css: fc.oneof(fc.string({ maxLength: 30 }), fc.constant(null)),
    html: fc.string({ minLength: 1, maxLength: 60 }),
    jsFunctions: fc.oneof(fc.string({ maxLength: 30 }), fc.constant(null)),
    jsExpressions: fc.array(fc.string({ maxLength: 12 }), { maxLength: 3 }),
  },
  { requiredKeys: ['initialHeight'] },
);

describe('Open Generative UI on AG-UI', () => {
  it('a whole call: the snapshot, its start and arguments, the deltas, then its end', () => {
    const args = {
      initialHeight: 120,
      placeholderMessages: ['Drawing…'],
      css: 'p{color:teal}',
      html: '<p id="hi">Hello</p>',
      jsFunctions: null,
      jsExpressions: ['1+1'],
    };
    const start: AgUiEvent = { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'generateSandboxedUi', parentMessageId: 'm1' };
    const argsEvent: AgUiEvent = { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: JSON.stringify(args) };
    const end: AgUiEvent = { type: 'TOOL_CALL_END', toolCallId: 'c1' };
    const [s1, before] = transformOpenGenerativeUi(initialOpenGenerativeUiState(), [{ type: 'TEXT_MESSAGE_END', messageId: 'm1' }, start, argsEvent]);
    expect(before).toEqual([{ type: 'TEXT_MESSAGE_END', messageId: 'm1' }]);
    const [s2, out] = transformOpenGenerativeUi(s1, [end, { type: 'RUN_FINISHED', threadId: 't', runId: 'r' }]);
    expect(s2.calls).toEqual({});
    const d = (path: string, value: JsonValue): AgUiEvent => ({
      type: 'ACTIVITY_DELTA',
      messageId: 'c1-activity',
      activityType: 'open-generative-ui',
      patch: [{ op: 'add', path, value }],
    });
    expect(out).toEqual([
      { type: 'ACTIVITY_SNAPSHOT', messageId: 'c1-activity', activityType: 'open-generative-ui', content: { initialHeight: 120, generating: true } },
      start,
      argsEvent,
      d('/placeholderMessages', []),
      d('/placeholderMessages/-', 'Drawing…'),
      d('/css', 'p{color:teal}'),
      d('/cssComplete', true),
      d('/html', []),
      d('/html/-', '<p id="hi">Hello</p>'),
      d('/htmlComplete', true),
      d('/jsFunctionsComplete', true),
      d('/jsExpressions', []),
      d('/jsExpressions/-', '1+1'),
      d('/jsExpressionsComplete', true),
      d('/generating', false),
      end,
      { type: 'RUN_FINISHED', threadId: 't', runId: 'r' },
    ]);
  });

  it('is CopilotKit’s parser for any arguments: one snapshot first, every add with a value, html an array', () => {
    fc.assert(
      fc.property(argsArb, fc.shuffledSubarray([...ORDER]), (args, keyOrder) => {
        // The model may write the keys in any order: the events are those of the tool's order.
        const written = Object.fromEntries(keyOrder.filter((k) => Object.hasOwn(args, k)).map((k) => [k, (args as Record<string, JsonValue>)[k] as JsonValue]));
        const ours = openGenerativeUiEvents('c9', written);
        const theirs = upstream('c9', written);
        // With no argument at all the middleware sends its end mark with no snapshot before it: the
        // seed's rule (a snapshot before any delta) is kept here by a snapshot of its own.
        const snapshotFirst = (theirs[0] as AgUiEvent).type === 'ACTIVITY_SNAPSHOT';
        expect(ours).toEqual(
          snapshotFirst
            ? theirs
            : [{ type: 'ACTIVITY_SNAPSHOT', messageId: 'c9-activity', activityType: 'open-generative-ui', content: { generating: true } }, ...theirs],
        );
        expect(ours.filter((e) => e.type === 'ACTIVITY_SNAPSHOT')).toHaveLength(1);
        expect(ours[0]?.type).toBe('ACTIVITY_SNAPSHOT');
        for (const e of ours.slice(1)) for (const op of e['patch'] as { op: string; value?: unknown }[]) expect(op.value).not.toBeUndefined();
        const content = ours
          .slice(1)
          .reduce(
            (doc, e) => jsonPatch.applyPatch(doc, e['patch'] as unknown as jsonPatch.Operation[], true, false).newDocument,
            structuredClone(ours[0]?.['content']) as object,
          ) as {
          html?: unknown;
          generating?: boolean;
        };
        expect(content.generating).toBe(false);
        if (typeof written['html'] === 'string') expect(content.html).toEqual([written['html']]);
      }),
      { numRuns: 300 },
    );
  });

  it('other calls and events pass as they are; a stream that ends with a call held sends it as it was', () => {
    const other: AgUiEvent[] = [
      { type: 'TOOL_CALL_START', toolCallId: 'x', toolCallName: 'get_weather', parentMessageId: 'm' },
      { type: 'TOOL_CALL_ARGS', toolCallId: 'x', delta: '{}' },
      { type: 'TOOL_CALL_END', toolCallId: 'x' },
    ];
    const [s, out] = transformOpenGenerativeUi(initialOpenGenerativeUiState(), other);
    expect(out).toEqual(other);
    const held: AgUiEvent[] = [
      { type: 'TOOL_CALL_START', toolCallId: 'g', toolCallName: 'generateSandboxedUi', parentMessageId: 'm' },
      { type: 'TOOL_CALL_ARGS', toolCallId: 'g', delta: '{"html":"<b>' },
    ];
    const [s2, none] = transformOpenGenerativeUi(s, held);
    expect(none).toEqual([]);
    expect(finishOpenGenerativeUi(s2)).toEqual(held);
    // Cut off mid-way (a run error or a cancel closes the call): no activity, the call as it was.
    const [, cut] = transformOpenGenerativeUi(s2, [{ type: 'TOOL_CALL_END', toolCallId: 'g' }]);
    expect(cut).toEqual([...held, { type: 'TOOL_CALL_END', toolCallId: 'g' }]);
  });
});
