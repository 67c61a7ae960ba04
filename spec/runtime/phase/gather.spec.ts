import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PhaseRuntime } from '../../../src/runtime/phase-runtime.ts';
import { StateFailure } from '../../../src/core/phase/phase-error.ts';
import type { PhaseContext, Plugin } from '../../../src/core/phase/plugin.ts';
import type { Snapshot } from '../../../src/core/state/snapshot.ts';
import { StateCommand } from '../../../src/core/state/state-command.ts';
import { counterKey, logKey, setKey } from '../../support/keys.ts';
import { hookPlugin, keysPlugin, plugin } from '../../support/plugins.ts';

const C1 = counterKey('c1');
const C2 = counterKey('c2');
const Tags = setKey('tags');
const L1 = logKey('l1');
const L2 = logKey('l2');
const L3 = logKey('l3');
const LOGS = [L1, L2, L3];
const COUNTERS = [C1, C2];

const keys = keysPlugin('keys', [{ key: C1 }, { key: C2 }, { key: Tags }, { key: L1 }, { key: L2 }, { key: L3 }]);

function runtime(plugins: Plugin[]): PhaseRuntime {
  const r = PhaseRuntime.create([keys, ...plugins]);
  if (!r.ok) throw new Error(JSON.stringify(r.error));
  return r.value;
}

const values = (s: Snapshot): Record<string, unknown> => Object.fromEntries(s.keys().map((k) => [k, s.getByName(k)]));

describe('GATHER', () => {
  it('runs every hook on one frozen snapshot and commits once when no exclusive key overlaps', async () => {
    const seen: number[] = [];
    const rt = runtime([
      hookPlugin('a', 'step_start', (ctx) => (seen.push(ctx.snapshot.revision), StateCommand.empty().update(L1, 'a'))),
      hookPlugin('b', 'step_start', (ctx) => (seen.push(ctx.snapshot.revision), StateCommand.empty().update(L2, 'b').update(C1, 1))),
      hookPlugin('c', 'step_start', (ctx) => (seen.push(ctx.snapshot.revision), StateCommand.empty().update(C1, 2))),
    ]);
    const report = await rt.runPhase('step_start');
    expect(report.ok && report.value).toMatchObject({ hooksRun: 3, deferredHooks: 0, commits: 1 });
    expect(seen).toEqual([0, 0, 0]);
    expect(rt.store.revision).toBe(1);
    expect(values(rt.store.snapshot())).toEqual({ c1: 3, l1: ['a'], l2: ['b'] });
  });

  it('drops empty commands and does not commit when every hook returns nothing', async () => {
    const rt = runtime([hookPlugin('a', 'step_start', () => StateCommand.empty()), hookPlugin('b', 'step_start', () => StateCommand.empty())]);
    const report = await rt.runPhase('step_start');
    expect(report.ok && report.value.commits).toBe(0);
    expect(rt.store.revision).toBe(0);
  });

  it('on an exclusive overlap commits the compatible batch, then re-runs each deferred hook on a fresh snapshot', async () => {
    const runs: string[] = [];
    const hook = (name: string, key: typeof L1) => (ctx: PhaseContext) => {
      runs.push(`${name}@${ctx.snapshot.revision}`);
      return StateCommand.empty().update(key, `${name}@${ctx.snapshot.revision}`);
    };
    // three_hooks_two_conflicting_one_independent
    const rt = runtime([
      hookPlugin('a', 'step_start', hook('a', L1)),
      hookPlugin('b', 'step_start', hook('b', L1)),
      hookPlugin('c', 'step_start', hook('c', L2)),
    ]);
    const report = await rt.runPhase('step_start');
    expect(report.ok && report.value).toMatchObject({ deferredHooks: 1, commits: 2 });
    expect(runs).toEqual(['a@0', 'b@0', 'c@0', 'b@1']);
    expect(values(rt.store.snapshot())).toEqual({ l1: ['a@0', 'b@1'], l2: ['c@0'] });
    expect(rt.store.revision).toBe(2);
  });

  it('a deferred hook that returns nothing on re-run commits nothing', async () => {
    let calls = 0;
    const rt = runtime([
      hookPlugin('a', 'step_start', () => StateCommand.empty().update(L1, 'a')),
      hookPlugin('b', 'step_start', () => (++calls === 1 ? StateCommand.empty().update(L1, 'b') : StateCommand.empty())),
    ]);
    const report = await rt.runPhase('step_start');
    expect(report.ok && report.value).toMatchObject({ deferredHooks: 1, commits: 1 });
    expect(rt.store.revision).toBe(1);
  });

  it('the first hook error by registration index fails the phase, whichever settles first; nothing is committed', async () => {
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const rt = runtime([
      hookPlugin('a', 'step_start', () => StateCommand.empty().update(C1, 1)),
      hookPlugin('b', 'step_start', async () => {
        await slow;
        throw new Error('first by index');
      }),
      hookPlugin('c', 'step_start', async () => {
        release();
        throw new StateFailure({ code: 'unknown_key', key: 'later' });
      }),
    ]);
    const report = await rt.runPhase('step_start');
    expect(report).toEqual({ ok: false, error: { code: 'hook_failed', phase: 'step_start', pluginId: 'b', message: 'first by index' } });
    expect(rt.store.revision).toBe(0);
  });

  it('a hook failing with a StateFailure fails the phase with that state error', async () => {
    const rt = runtime([
      hookPlugin('a', 'run_end', () => {
        throw new StateFailure({ code: 'cancelled' });
      }),
    ]);
    expect(await rt.runPhase('run_end')).toEqual({ ok: false, error: { code: 'cancelled' } });
  });

  it('a deferred hook that throws on re-run fails the phase after the batch commit', async () => {
    let calls = 0;
    const rt = runtime([
      hookPlugin('a', 'step_start', () => StateCommand.empty().update(L1, 'a')),
      hookPlugin('b', 'step_start', () => {
        if (++calls > 1) throw 'again';
        return StateCommand.empty().update(L1, 'b');
      }),
    ]);
    expect(await rt.runPhase('step_start')).toEqual({ ok: false, error: { code: 'hook_failed', phase: 'step_start', pluginId: 'b', message: 'again' } });
    expect(rt.store.revision).toBe(1);
  });

  it('a hook command with an explicit stale base revision fails with revision_conflict', async () => {
    const rt = runtime([hookPlugin('a', 'step_start', () => StateCommand.empty().update(C1, 1).withBaseRevision(7))]);
    expect(await rt.runPhase('step_start')).toEqual({ ok: false, error: { code: 'revision_conflict', expected: 7, actual: 0 } });
  });

  it('runs only hooks of plugins named in the active hook filter (empty = all)', async () => {
    const rt = runtime([
      hookPlugin('a', 'step_end', () => StateCommand.empty().update(C1, 1)),
      hookPlugin('b', 'step_end', () => StateCommand.empty().update(C2, 1)),
    ]);
    await rt.runPhase('step_end', { activeHookFilter: ['b'] });
    expect(values(rt.store.snapshot())).toEqual({ c2: 1 });
    await rt.runPhase('step_end', { activeHookFilter: [] });
    expect(values(rt.store.snapshot())).toEqual({ c1: 1, c2: 2 });
  });

  it('passes the phase input to hooks', async () => {
    let got: unknown;
    const rt = runtime([hookPlugin('a', 'before_inference', (ctx) => ((got = ctx.input['messages']), StateCommand.empty()))]);
    await rt.runPhase('before_inference', { input: { messages: ['m'] } });
    expect(got).toEqual(['m']);
  });

  it('is cancelled at phase entry and again after GATHER', async () => {
    const flag = { aborted: true };
    const rt = runtime([hookPlugin('a', 'step_start', () => ((flag.aborted = true), StateCommand.empty().update(C1, 1)))]);
    expect(await rt.runPhase('step_start', { signal: flag })).toEqual({ ok: false, error: { code: 'cancelled' } });
    expect(rt.store.revision).toBe(0);
    flag.aborted = false;
    expect(await rt.runPhase('step_start', { signal: flag })).toEqual({ ok: false, error: { code: 'cancelled' } });
    expect(rt.store.revision).toBe(1);
  });

  it('collectCommands merges without committing and fails on an exclusive conflict', async () => {
    const rt = runtime([
      hookPlugin('a', 'before_inference', () => StateCommand.empty().update(C1, 1)),
      hookPlugin('b', 'before_inference', () => StateCommand.empty().update(C1, 2)),
    ]);
    const merged = await rt.collectCommands('before_inference');
    expect(merged.ok && merged.value.touchedKeys).toEqual(['c1', 'c1']);
    expect(rt.store.revision).toBe(0);
    const conflict = runtime([
      hookPlugin('a', 'before_inference', () => StateCommand.empty().update(L1, 'a')),
      hookPlugin('b', 'before_inference', () => StateCommand.empty().update(L1, 'b')),
    ]);
    expect(await conflict.collectCommands('before_inference')).toEqual({ ok: false, error: { code: 'parallel_merge_conflict', key: 'l1' } });
    const failing = runtime([
      hookPlugin('a', 'before_inference', () => {
        throw new Error('x');
      }),
    ]);
    expect((await failing.collectCommands('before_inference')).ok).toBe(false);
  });
});

// ---- properties 1 and 2 --------------------------------------------------------------------------

type Spec = { counters: [number, number][]; tags: string[]; logs: number[] };
const hookSpec = fc.record({
  counters: fc.array(fc.tuple(fc.nat({ max: 1 }), fc.integer({ min: -3, max: 3 })), { maxLength: 3 }),
  tags: fc.array(fc.constantFrom('x', 'y', 'z'), { maxLength: 2 }),
  logs: fc.uniqueArray(fc.nat({ max: 2 }), { maxLength: 2 }),
});

/** A hook's command as a pure function of its index and the snapshot it sees. */
function command(i: number, spec: Spec, revision: number): StateCommand {
  const cmd = StateCommand.empty();
  for (const [k, n] of spec.counters) cmd.update(COUNTERS[k]!, n);
  for (const t of spec.tags) cmd.update(Tags, t);
  for (const l of spec.logs) cmd.update(LOGS[l]!, `h${i}@${revision}`);
  return cmd;
}

describe('GATHER properties', () => {
  it('property 1: commutative-only hooks commit the same state for every settle order and registration order', async () => {
    const specs = hookSpec.map((s) => ({ ...s, logs: [] }));
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(specs, { minLength: 1, maxLength: 6 }).chain((hooks) =>
          fc.tuple(
            fc.constant(hooks),
            fc.shuffledSubarray(
              hooks.map((_, i) => i),
              { minLength: hooks.length, maxLength: hooks.length },
            ),
          ),
        ),
        async (s, [hooks, order]) => {
          const hook = (i: number) => () => s.schedule(Promise.resolve(command(i, hooks[i]!, 0)));
          const rt = runtime(order.map((i) => hookPlugin(`h${i}`, 'step_start', hook(i))));
          const report = await s.waitFor(rt.runPhase('step_start'));
          expect(report.ok).toBe(true);
          const expected: Record<string, unknown> = {};
          for (const h of hooks) {
            for (const [k, n] of h.counters) expected[`c${k + 1}`] = ((expected[`c${k + 1}`] as number | undefined) ?? 0) + n;
            if (h.tags.length > 0) expected['tags'] = [...new Set([...((expected['tags'] as string[] | undefined) ?? []), ...h.tags])].sort();
          }
          expect(values(rt.store.snapshot())).toEqual(expected);
          expect(rt.store.revision).toBe(Object.keys(expected).length > 0 ? 1 : 0);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('property 2: with exclusive overlaps the result equals batch-then-deferred-in-order, and no hook sees a partial state', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.array(hookSpec, { minLength: 1, maxLength: 6 }), async (s, hooks) => {
        const seen: { revision: number; state: Record<string, unknown> }[] = [];
        const rt = runtime(
          hooks.map((h, i) =>
            hookPlugin(`h${i}`, 'after_inference', (ctx) => {
              seen.push({ revision: ctx.snapshot.revision, state: values(ctx.snapshot) });
              return s.schedule(Promise.resolve(command(i, h, ctx.snapshot.revision)));
            }),
          ),
        );
        const committed = new Map<number, Record<string, unknown>>([[0, {}]]);
        rt.store.onCommit((e) => committed.set(e.newRevision, values(e.snapshot)));
        const report = await s.waitFor(rt.runPhase('after_inference'));
        expect(report.ok).toBe(true);

        // Reference model: partition greedily, apply the batch, then each deferred hook on the new state.
        const model: Record<string, unknown> = {};
        let revision = 0;
        const apply = (i: number): void => {
          const h = hooks[i]!;
          for (const [k, n] of h.counters) model[`c${k + 1}`] = ((model[`c${k + 1}`] as number | undefined) ?? 0) + n;
          for (const t of h.tags) model['tags'] = [...new Set([...((model['tags'] as string[] | undefined) ?? []), t])].sort();
          for (const l of h.logs) model[`l${l + 1}`] = [...((model[`l${l + 1}`] as string[] | undefined) ?? []), `h${i}@${revisionSeen}`];
        };
        let revisionSeen = 0;
        const nonEmpty = hooks.map((h, i) => ({ h, i })).filter(({ h }) => h.counters.length + h.tags.length + h.logs.length > 0);
        const claimed = new Set<number>();
        const batch: number[] = [];
        const deferred: number[] = [];
        for (const { h, i } of nonEmpty) {
          if (h.logs.some((l) => claimed.has(l))) deferred.push(i);
          else {
            h.logs.forEach((l) => {
              claimed.add(l);
            });
            batch.push(i);
          }
        }
        if (batch.length > 0) {
          batch.forEach(apply);
          revision++;
        }
        for (const i of deferred) {
          revisionSeen = revision;
          apply(i);
          revision++;
        }
        expect(values(rt.store.snapshot())).toEqual(model);
        expect(rt.store.revision).toBe(revision);
        expect(report.ok && report.value.deferredHooks).toBe(deferred.length);
        for (const view of seen) expect(view.state).toEqual(committed.get(view.revision));
      }),
      { numRuns: 200 },
    );
  });
});

describe('phase runs are serialised', () => {
  it('two concurrent phase runs commit one after the other', async () => {
    const rt = runtime([
      plugin('p', (r) =>
        r
          .registerPhaseHook('step_start', async (ctx) => {
            await Promise.resolve();
            return StateCommand.empty().update(L1, `start@${ctx.snapshot.revision}`);
          })
          .registerPhaseHook('step_end', (ctx) => StateCommand.empty().update(L1, `end@${ctx.snapshot.revision}`)),
      ),
    ]);
    await Promise.all([rt.runPhase('step_start'), rt.runPhase('step_end')]);
    expect(rt.store.snapshot().get(L1)).toEqual(['start@0', 'end@1']);
  });
});
