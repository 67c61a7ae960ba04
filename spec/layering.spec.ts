import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importGraph, importsOf, listSources } from './support/import-graph.ts';
import { instanceStateIn, layeringViolations, moduleStateIn, nondeterminismIn, waitingIn } from './support/layering.ts';

const repo = resolve(import.meta.dirname, '..');

describe('layering (ARCHITECTURE.md → Layering)', () => {
  it('src/ has no arrow going the wrong way', () => {
    expect(layeringViolations(importGraph(repo, 'src'))).toEqual([]);
  });

  it('the pure core reads no clock, draws no randomness or id, uses no timer and does no I/O', () => {
    const offenders = listSources(join(repo, 'src/core')).flatMap((file) => nondeterminismIn(readFileSync(file, 'utf8')).map((why) => `${file}: ${why}`));
    expect(offenders).toEqual([]);
  });

  it('the pure core keeps no state between calls at module level: no let or var, containers read-only or frozen, no static fields that change, no instance made at load', () => {
    const offenders = listSources(join(repo, 'src/core')).flatMap((file) => moduleStateIn(readFileSync(file, 'utf8')).map((why) => `${file}: ${why}`));
    expect(offenders).toEqual([]);
  });

  /**
   * The classes of the core whose instances change after they are made, and why none of them is state
   * kept between calls: each is made, filled and read by one caller within one call of its own.
   */
  const CORE_ACCUMULATORS: ReadonlyMap<string, string> = new Map([
    ['MutationBatch', 'builder of one commit: made by a hook or the runtime, frozen into a snapshot by the commit'],
    ['StateCommand', 'builder of one command, returned by the hook that made it'],
    ['SnapshotDraft', 'private copy of slots written during one commit, then frozen into a Snapshot'],
    ['PluginRegistrar', "builder of one plugin's registration"],
    ['StreamAccumulator', "fold of one inference stream's parts, owned by the call that reads the stream"],
    ['KeyLayout', 'append-only index of key names shared by snapshots; a new slot changes no snapshot value'],
  ]);

  it('no instance of the pure core keeps state between calls: mutable fields only in the listed builders and folds (state lives in src/runtime)', () => {
    const allowed = new Set(CORE_ACCUMULATORS.keys());
    const offenders = listSources(join(repo, 'src/core')).flatMap((file) =>
      instanceStateIn(readFileSync(file, 'utf8'), allowed).map((why) => `${file}: ${why}`),
    );
    expect(offenders).toEqual([]);
  });

  it('the pure core never waits: no async function, await or promise chain (the runtime calls hooks and handlers)', () => {
    const offenders = listSources(join(repo, 'src/core')).flatMap((file) => waitingIn(readFileSync(file, 'utf8')).map((why) => `${file}: ${why}`));
    expect(offenders).toEqual([]);
  });

  describe('the checker itself', () => {
    it.each([
      ['class Engine { #nextId = 1; }', ["field '#nextId' of Engine can change"]],
      ['class Lock { readonly #waiters: (() => void)[] = []; }', ["field '#waiters' of Lock holds a container made at construction"]],
      ['class Store { snapshot: object; constructor() { this.snapshot = {}; } }', ["field 'snapshot' of Store can change"]],
      ['function f() { return class Inner { count = 0; }; }', ["field 'count' of Inner can change"]],
    ])('flags instance state: %s', (code, why) => {
      expect(instanceStateIn(code)).toEqual(why);
    });

    it.each([
      'class Value { readonly revision: number; constructor(r: number) { this.revision = r; } }',
      'class Slots { readonly #slots: readonly unknown[]; constructor(s: unknown[]) { this.#slots = s; } }',
      'class K { static readonly ZERO = 0; }',
    ])('allows an immutable instance: %s', (code) => {
      expect(instanceStateIn(code)).toEqual([]);
    });

    it('allows the listed accumulators only', () => {
      expect(instanceStateIn('class Builder { #ops = []; }', new Set(['Builder']))).toEqual([]);
      expect(instanceStateIn('class Builder { #ops = []; }', new Set(['Other']))).toEqual(["field '#ops' of Builder can change"]);
    });

    it.each([
      ['async function f() {}', ['declares an async function']],
      ['const x = await y;', ['awaits']],
      ['p.then(f)', ['chains a promise']],
      ['Promise.resolve(1)', ['chains a promise']],
    ])('flags waiting: %s', (code, why) => {
      expect(waitingIn(code)).toEqual(why);
    });

    it('allows promise types and comments', () => {
      expect(waitingIn('type Hook = () => StateCommand | Promise<StateCommand>;\n// await nothing; .then( in a comment')).toEqual([]);
    });

    it.each([
      ['src/core/x.ts', 'src/runtime/y.ts', 'wrong way'],
      ['src/core/x.ts', 'node:fs', 'may import only zod'],
      ['src/contract/x.ts', 'fast-json-patch', 'may import only zod'],
      ['src/core/state/x.ts', 're2js', 'may import only zod (and, in src/core/pattern/, re2js)'],
      ['src/contract/x.ts', 're2js', 'may import only zod'],
      ['src/core/pattern/x.ts', 'node:fs', 'may import only zod'],
      ['src/contract/x.ts', 'src/core/state/y.ts', 'wrong way'],
      ['src/runtime/x.ts', 'src/protocols/ag-ui/y.ts', 'wrong way'],
      ['src/plugins/x.ts', 'src/providers/y.ts', 'sibling'],
      ['src/protocols/ag-ui/x.ts', 'src/protocols/a2a/y.ts', 'another protocol'],
      ['src/protocols/ai-sdk-v6/request.ts', 'src/runtime/run-loop.ts', 'a protocol speaks the contract'],
      ['src/protocols/ag-ui/request.ts', 'src/runtime/inbound.ts', 'a protocol speaks the contract'],
      ['src/runtime/cluster-bus.ts', 'src/runtime/run-loop.ts', 'the bus carries contract values'],
      ['src/server/x.ts', 'src/cli/main.ts', 'nothing imports cli'],
      ['src/replay/x.ts', 'src/testing/y.ts', 'imports testing'],
      ['src/stores/x.ts', 'src/server/y.ts', 'sibling'],
    ])('flags %s → %s', (from, to, reason) => {
      const found = layeringViolations([{ from, to }]);
      expect(found).toHaveLength(1);
      expect(found[0]).toContain(reason);
    });

    it.each([
      ['src/core/x.ts', 'src/contract/y.ts'],
      ['src/core/x.ts', 'zod'],
      ['src/core/pattern/regex.ts', 're2js'],
      ['src/runtime/x.ts', 'src/core/y.ts'],
      ['src/protocols/ag-ui/x.ts', 'src/protocols/ag-ui/y.ts'],
      ['src/protocols/ag-ui/x.ts', 'fast-json-patch'],
      ['src/server/x.ts', 'src/protocols/a2a/index.ts'],
      ['src/cli/x.ts', 'src/server/y.ts'],
      ['src/cli/fuzz-command.ts', 'src/testing/fuzz-plugin.ts'],
      ['src/testing/x.ts', 'fast-check'],
      ['src/index.ts', 'src/contract/index.ts'],
    ])('allows %s → %s', (from, to) => {
      expect(layeringViolations([{ from, to }])).toEqual([]);
    });

    it('reads static, type-only, re-export and dynamic imports', () => {
      const text =
        "import { a } from './a.ts';\nimport type { B } from \"../b.ts\";\nexport * from './c.ts';\nconst d = await import('./d.ts');\nimport 'side';";
      expect(importsOf(text).sort()).toEqual(['../b.ts', './a.ts', './c.ts', './d.ts', 'side']);
    });

    it.each([
      ['let calls = 0;', "module-level let 'calls'"],
      ['var cache;', "module-level var 'cache'"],
      ['const seen = new Map<string, number>();', "module-level container 'seen' is neither read-only nor frozen"],
      ['const ids = [];', "module-level container 'ids' is neither read-only nor frozen"],
      ['const table = { a: 1 };', "module-level container 'table' is neither read-only nor frozen"],
      ['class Counter { static n = 0; }', "static field 'n' of Counter is not readonly"],
      ['const counter = new Counter();', "module-level container 'counter' is neither read-only nor frozen"],
      ['export let exported = 1;', "module-level let 'exported'"],
    ])('flags module state: %s', (code, why) => {
      expect(moduleStateIn(code)).toEqual([why]);
    });

    it.each([
      'const LIMIT = 3;',
      'const WEIGHTS: readonly number[] = [1, 2];',
      'const KINDS: ReadonlySet<string> = new Set(["a"]);',
      'const BY: ReadonlyMap<string, number> = new Map();',
      'const TABLE: Readonly<Record<string, number>> = { a: 1 };',
      'const FROZEN = Object.freeze([1, 2]);',
      'const NAMES = ["a", "b"] as const;',
      'class C { static readonly ZERO = 0; #n = 0; }',
      'function f() { let x = 0; const m = new Map(); return x + m.size; }',
      'const make = () => new Map();',
      'const Schema = z.object({ a: z.string() });',
    ])('allows: %s', (code) => {
      expect(moduleStateIn(code)).toEqual([]);
    });

    it('flags clock, randomness, timers and I/O, ignoring comments', () => {
      expect(nondeterminismIn('const t = Date.now();')).toEqual(['reads the clock']);
      expect(nondeterminismIn('const r = Math.random();')).toEqual(['draws randomness or an id']);
      expect(nondeterminismIn('setTimeout(f, 1)')).toEqual(['uses timers']);
      expect(nondeterminismIn('await fetch(url)')).toEqual(['does I/O']);
      expect(nondeterminismIn('// Date.now() is banned here\nconst x = 1;')).toEqual([]);
    });
  });
});
