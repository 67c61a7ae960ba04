import { describe, expect, it } from 'vitest';
import type { LiveRun } from '../../../src/server/live-run.ts';
import { asPrincipal } from '../../../src/server/principal.ts';
import { LiveRuns } from '../../../src/server/registry/live-runs.ts';
import { liveRun } from '../../support/registry-fakes.ts';

/** The runs of one instance and how a request finds one (by run or thread, as its principal, not while let go). */
describe('LiveRuns', () => {
  it('finds a run by run id and by thread id; a removed run is gone from both', () => {
    const runs = new LiveRuns(() => false);
    const run = liveRun('r1', 't1');
    runs.add(run);
    expect(runs.size).toBe(1);
    expect(runs.find('r1')).toBe(run);
    expect(runs.find('t1')).toBe(run);
    expect(runs.current('t1')).toBe(run);
    runs.remove(run);
    expect(runs.size).toBe(0);
    expect(runs.find('r1')).toBeUndefined();
    expect(runs.current('t1')).toBeUndefined();
  });

  it('removing an older run of a thread leaves the thread its newer run', () => {
    const runs = new LiveRuns(() => false);
    const old = liveRun('r1', 't1');
    const next = liveRun('r2', 't1');
    runs.add(old);
    runs.add(next);
    runs.remove(old);
    expect(runs.current('t1')).toBe(next);
    expect(runs.has('r1')).toBe(false);
    expect(runs.has('r2')).toBe(true);
  });

  it("hides another principal's run from a request acting as someone, and shows it with no principal", () => {
    const runs = new LiveRuns(() => false);
    const run = liveRun('r1', 't1', { owner: 'alice' });
    runs.add(run);
    expect(asPrincipal('bob', () => runs.find('r1'))).toBeUndefined();
    expect(asPrincipal('bob', () => runs.visible(run))).toBeUndefined();
    expect(asPrincipal('alice', () => runs.find('t1'))).toBe(run);
    expect(runs.find('t1')).toBe(run);
  });

  it('does not find a run being let go, though it is still counted and visible', () => {
    const releasing = new Set<LiveRun>();
    const runs = new LiveRuns((r) => releasing.has(r));
    const run = liveRun('r1', 't1');
    runs.add(run);
    releasing.add(run);
    expect(runs.find('r1')).toBeUndefined();
    expect(runs.held(run)).toBeUndefined();
    expect(runs.visible(run)).toBe(run);
    expect(runs.get('r1')).toBe(run);
  });
});
