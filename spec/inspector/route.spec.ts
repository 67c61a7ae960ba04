import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hrefOf, parseRoute, type Route } from '../../inspector/src/route.ts';

/** The studio's addresses (docs/inspector.md → Links): every view, thread, run and step has one, and reading it back gives the same place. */

const id = fc.string({
  minLength: 1,
  maxLength: 24,
  unit: fc.oneof(fc.constantFrom('/', ':', '#', '%', '?', ' ', '.', 'é', '😀'), fc.string({ minLength: 1, maxLength: 1 })),
});
const route: fc.Arbitrary<Route> = fc.oneof(
  fc.constant<Route>({ view: 'chat' }),
  id.map((thread): Route => ({ view: 'chat', thread })),
  fc.constant<Route>({ view: 'replay' }),
  fc.constant<Route>({ view: 'runs' }),
  id.map((thread): Route => ({ view: 'runs', thread })),
  fc.tuple(id, id).map(([thread, run]): Route => ({ view: 'runs', thread, run })),
  fc.tuple(id, id, fc.nat({ max: 999_999_999 })).map(([thread, run, step]): Route => ({ view: 'runs', thread, run, step })),
);

describe('studio addresses', () => {
  it('read back, an address is the place it was made for, whatever the ids hold', () => {
    fc.assert(
      fc.property(route, (r) => {
        expect(parseRoute(hrefOf(r))).toEqual(r);
      }),
      { numRuns: 2_000 },
    );
  });

  it('an address is one fragment: its ids are percent-encoded, so none adds a path segment', () => {
    expect(hrefOf({ view: 'runs', thread: 'user:42/a#b', run: 'run 1', step: 3 })).toBe('#/threads/user%3A42%2Fa%23b/runs/run%201/steps/3');
    expect(hrefOf({ view: 'chat', thread: 't/1' })).toBe('#/chat/t%2F1');
  });

  it('anything it does not know (an empty fragment, a bad escape, a wrong word, extra parts) is the thread list, or the deepest place it names', () => {
    const cases: readonly (readonly [string, Route])[] = [
      ['', { view: 'runs' }],
      ['#', { view: 'runs' }],
      ['#/', { view: 'runs' }],
      ['#/threads', { view: 'runs' }],
      ['#/threads/', { view: 'runs' }],
      ['#/nowhere', { view: 'runs' }],
      ['#/threads/%E0%A4%A', { view: 'runs' }],
      ['#/threads//runs/r', { view: 'runs' }],
      ['#/threads/t/rns/r', { view: 'runs' }],
      ['#/threads/t/runs/r/steps/x', { view: 'runs', thread: 't', run: 'r' }],
      ['#/threads/t/runs/r/stp/1', { view: 'runs', thread: 't', run: 'r' }],
      ['#/threads/t/runs/r/steps/1/more', { view: 'runs' }],
      ['#/chat/t/runs', { view: 'runs' }],
      ['#/replay/x', { view: 'runs' }],
      ['#/threads/t/runs/r/steps/2/', { view: 'runs', thread: 't', run: 'r', step: 2 }],
    ];
    for (const [hash, expected] of cases) expect([hash, parseRoute(hash)]).toEqual([hash, expected]);
  });
});
