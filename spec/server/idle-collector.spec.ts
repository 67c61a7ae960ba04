import { execFileSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { IdleCollector } from '../../src/server/idle-collector.ts';
import { listen } from '../../src/server/node.ts';
import { repo } from '../support/serve-process.ts';
import { json, testServer } from '../support/server.ts';

/**
 * A quiet server gives memory back (issue: the server under faults, slow readers): one full
 * collection after the last run ended or stream closed, never while a run is going, never more often
 * than the spacing allows.
 */
describe('IdleCollector', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  const setup = (busy = () => false) => {
    const collect = vi.fn();
    const c = new IdleCollector(collect, busy, { delayMs: 1000, minSpacingMs: 5000 }, () => Date.now());
    return { c, collect };
  };

  it('collects once, delayMs after the last of several touches', () => {
    const { c, collect } = setup();
    c.touch();
    vi.advanceTimersByTime(600);
    c.touch();
    vi.advanceTimersByTime(600);
    c.touch();
    vi.advanceTimersByTime(999);
    expect(collect).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(collect).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(60_000);
    expect(collect).toHaveBeenCalledTimes(1);
  });

  it('does not collect while a run is going; the next touch (its end) does', () => {
    let busy = true;
    const { c, collect } = setup(() => busy);
    c.touch();
    vi.advanceTimersByTime(5000);
    expect(collect).not.toHaveBeenCalled();
    busy = false;
    c.touch();
    vi.advanceTimersByTime(1000);
    expect(collect).toHaveBeenCalledTimes(1);
  });

  it('keeps minSpacingMs between two collections: a touch sooner collects when the spacing is over', () => {
    const { c, collect } = setup();
    c.touch();
    vi.advanceTimersByTime(1000);
    expect(collect).toHaveBeenCalledTimes(1);
    c.touch();
    vi.advanceTimersByTime(1000);
    expect(collect).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(3999);
    expect(collect).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(1);
    expect(collect).toHaveBeenCalledTimes(2);
  });

  it('collects nothing once closed', () => {
    const { c, collect } = setup();
    c.touch();
    c.close();
    c.touch();
    vi.advanceTimersByTime(10_000);
    expect(collect).not.toHaveBeenCalled();
  });
});

describe('fullCollection', () => {
  // In a process of its own: the spec runner may itself run under --expose-gc.
  it('is the engine collection in a process started without --expose-gc: frees what nothing reaches, and hands no gc to other contexts', () => {
    const script = [
      "const { fullCollection } = await import('./src/server/idle-collector.ts');",
      "const { runInNewContext } = await import('node:vm');",
      'const before = typeof globalThis.gc;',
      'const gc = fullCollection();',
      'let garbage = { big: new Array(1_000_000).fill(0) };',
      'const ref = new WeakRef(garbage);',
      'garbage = undefined;',
      'await new Promise((r) => setImmediate(r));',
      'gc();',
      "console.log(JSON.stringify({ before, gc: typeof gc, freed: ref.deref() === undefined, other: runInNewContext('typeof gc') }));",
    ].join('\n');
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: repo,
      env: { ...process.env, NODE_OPTIONS: '' },
    }).toString();
    expect(JSON.parse(out.trim().split('\n').at(-1) as string)).toEqual({ before: 'undefined', gc: 'function', freed: true, other: 'undefined' });
  });
});

describe('the registry tells when it goes quiet', () => {
  it('onQuiet: when a run ends and when a stream closes; liveRuns counts the runs going', async () => {
    const quiet: number[] = [];
    const s = testServer([{ text: ['hello'] }, { text: ['again'] }], { registry: { onQuiet: () => quiet.push(s.registry.liveRuns) } });
    const server = await listen(s.app, { port: 0 });
    try {
      expect((await fetch(`${server.url}/v1/threads`, json({ id: 'q' }))).status).toBe(201);
      await (await fetch(`${server.url}/v1/runs`, json({ threadId: 'q', messages: [{ role: 'user', content: 'hi' }] }))).text();
      for (let i = 0; i < 200 && !quiet.includes(0); i++) await new Promise((r) => setTimeout(r, 5));
      // The run's own response stream closes with its terminal frame, then the run ends.
      expect(quiet.at(-1)).toBe(0);
      expect(s.registry.liveRuns).toBe(0);
      const afterRun = quiet.length;

      const abort = new AbortController();
      const stream = await fetch(`${server.url}/v1/threads/q/stream?since=0`, { signal: abort.signal });
      expect(stream.status).toBe(200);
      const reader = stream.body?.getReader();
      await reader?.read();
      abort.abort();
      for (let i = 0; i < 200 && quiet.length === afterRun; i++) await new Promise((r) => setTimeout(r, 5));
      expect(quiet.slice(afterRun)).toEqual([0]);
    } finally {
      await server.close();
    }
  });
});
