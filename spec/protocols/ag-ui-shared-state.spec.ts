import fc from 'fast-check';
import jsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../src/contract/json.ts';
import { requestAgUiState, transcodeAgUi, type AgUiEvent, type AgUiState } from '../../src/protocols/ag-ui/encoder.ts';

/**
 * A server shows an AG-UI client only the state keys its agent shares: the snapshot and every delta
 * are cut to them, and a client that patches what it was sent holds exactly the shared part of the
 * runtime's state — whatever the runtime's other keys do meanwhile.
 */

type Extensions = { [key: string]: JsonValue };
const KEYS = ['todos', 'theme', '__runtime.run_lifecycle', 'permission_policy', 'a/b', 'c~d'] as const;
const extensions: fc.Arbitrary<Extensions> = fc.dictionary(fc.constantFrom(...KEYS), fc.jsonValue() as fc.Arbitrary<JsonValue>, { maxKeys: KEYS.length });

const only = (ext: Extensions, shared: readonly string[]): Extensions => Object.fromEntries(Object.entries(ext).filter(([k]) => shared.includes(k)));

function run(state: AgUiState, events: readonly Parameters<typeof transcodeAgUi>[1][]): AgUiEvent[] {
  let s = state;
  const out: AgUiEvent[] = [];
  for (const e of events) {
    const [next, frames] = transcodeAgUi(s, e);
    s = next;
    out.push(...frames);
  }
  return out;
}

describe('AG-UI shared state', () => {
  it('patching the cut snapshot with the cut deltas gives the cut of the runtime’s state, step after step', () => {
    fc.assert(
      fc.property(fc.subarray([...KEYS]), fc.array(extensions, { minLength: 1, maxLength: 5 }), (shared, states) => {
        const doc = (ext: Extensions, revision: number): JsonValue => ({ revision, extensions: ext });
        const events: Parameters<typeof transcodeAgUi>[1][] = [
          { event_type: 'run_start', thread_id: 't', run_id: 'r' },
          { event_type: 'state_snapshot', snapshot: doc(states[0] as Extensions, 0) },
        ];
        for (let i = 1; i < states.length; i++) {
          const delta = jsonPatch.compare(
            doc(states[i - 1] as Extensions, i - 1) as object,
            doc(states[i] as Extensions, i) as object,
          ) as unknown as JsonValue[];
          events.push({ event_type: 'state_delta', delta });
        }
        const frames = run(requestAgUiState({ shared }), events);
        let client: JsonValue = null;
        for (const f of frames) {
          if (f.type === 'STATE_SNAPSHOT') client = structuredClone(f['snapshot'] as JsonValue);
          if (f.type === 'STATE_DELTA') client = jsonPatch.applyPatch(client, f['delta'] as never, false, false).newDocument as JsonValue;
          if (f.type === 'STATE_SNAPSHOT' || f.type === 'STATE_DELTA') {
            const touched = JSON.stringify(f).includes('__runtime') || JSON.stringify(f).includes('permission_policy');
            if (!shared.includes('__runtime.run_lifecycle') && !shared.includes('permission_policy')) expect(touched).toBe(false);
          }
        }
        // As JSON carries them (-0 is 0 on the wire).
        expect(JSON.parse(JSON.stringify(client))).toEqual(JSON.parse(JSON.stringify(only(states.at(-1) as Extensions, shared))));
      }),
    );
  });

  it('a move or copy between keys: whole between shown keys, a remove when a shown key moves to a hidden one, nothing from a hidden key', () => {
    const frames = run(requestAgUiState({ shared: ['todos', 'done'] }), [
      { event_type: 'run_start', thread_id: 't', run_id: 'r' },
      { event_type: 'state_snapshot', snapshot: { revision: 1, extensions: { todos: [1], done: [], secret: 's' } } },
      {
        event_type: 'state_delta',
        delta: [
          { op: 'move', from: '/extensions/todos/0', path: '/extensions/done/-' },
          { op: 'copy', from: '/extensions/secret', path: '/extensions/todos' },
          { op: 'move', from: '/extensions/done', path: '/extensions/secret' },
          { op: 'copy', from: '/extensions/todos', path: '/extensions/hidden' },
        ],
      },
    ]);
    expect(frames.find((f) => f.type === 'STATE_DELTA')?.['delta']).toEqual([
      { op: 'move', from: '/todos/0', path: '/done/-' },
      { op: 'remove', path: '/done' },
    ]);
  });

  it('outside a server (no list) every key is shown, as before', () => {
    const frames = run(requestAgUiState({}), [
      { event_type: 'run_start', thread_id: 't', run_id: 'r' },
      { event_type: 'state_snapshot', snapshot: { revision: 1, extensions: { todos: [1], '__runtime.run_lifecycle': { status: 'running' } } } },
    ]);
    expect(frames.find((f) => f.type === 'STATE_SNAPSHOT')?.['snapshot']).toEqual({ todos: [1], '__runtime.run_lifecycle': { status: 'running' } });
  });
});
