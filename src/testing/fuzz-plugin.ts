import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import { PHASES, type Phase } from '../contract/phase.ts';
import { commandOf } from '../core/phase/engine.ts';
import { PluginRegistrar, type PhaseContext, type Plugin } from '../core/phase/plugin.ts';
import { MutationBatch } from '../core/state/mutation-batch.ts';
import type { StateCommand } from '../core/state/state-command.ts';
import type { AnyStateKey } from '../core/state/state-key.ts';
import { loopActionsPlugin, loopStatePlugin } from '../runtime/builtin-plugins.ts';
import { PhaseRuntime } from '../runtime/phase-runtime.ts';
import { agentSpec, id, message, tokenUsage, toolCall, toolDescriptor, toolResult } from './arbitraries.ts';
import { interceptRegistrar } from './registrar.ts';
import { checkStateKeyLaws, seedable, seedOf, show, type KeyLawReport } from './state-laws.ts';
import { unreachable } from '../contract/never.ts';

/**
 * `fuzzPlugin(plugin)`: the plugin's hooks over generated phase inputs and states, checking what
 * the engine relies on and cannot check itself:
 *
 * - `deterministic`: the same snapshot and input give the same commands, called again, and called
 *   in any order with their promises settling in any order (`fc.scheduler`);
 * - `own-keys`: its commands write only the keys it registered;
 * - `converges`: its scheduled actions settle within the engine's round bound (the phase run
 *   through the real engine, with the runtime's own action handlers);
 * - the state-key laws (`checkStateKeyLaws`) of every key it registers that `updates` gives
 *   updates for.
 *
 * A failure is shrunk and printed with the phase, the input and the two results that disagree, and
 * the seed and path that replay it.
 */
export interface FuzzPluginOptions {
  /** Updates a hook may write, per key name: the keys' values are generated from them, and their laws checked. */
  readonly updates?: Readonly<Record<string, fc.Arbitrary<unknown>>>;
  readonly numRuns?: number;
  readonly seed?: number;
  /** `check@phase@path` from a failure: replays that counterexample alone. */
  readonly path?: string;
  /** The engine's round bound for the convergence check (default: the runtime's). */
  readonly maxRounds?: number;
}

export type PluginCheck = 'registration' | 'deterministic' | 'own-keys' | 'converges';

export interface PluginFailure {
  readonly plugin: string;
  readonly check: PluginCheck;
  readonly phase: Phase | undefined;
  readonly counterexample: readonly string[];
  readonly seed: number;
  readonly path: string | undefined;
}

export interface PluginFuzzReport {
  readonly plugin: string;
  /** The phases its hooks run in. */
  readonly phases: readonly Phase[];
  readonly keys: readonly KeyLawReport[];
  /** Keys the laws were not checked for: no updates were given for them. */
  readonly unchecked: readonly string[];
  readonly failures: readonly PluginFailure[];
  readonly passed: boolean;
}

const messages = fc.array(message(), { maxLength: 3 });
const now = fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 });

/** A generated input for each phase, as the loop gives it (core-spec §3). */
export function phaseInput(phase: Phase): fc.Arbitrary<object> {
  const run = { agentSpec: agentSpec(), threadId: id(), runId: id() };
  switch (phase) {
    case 'run_start':
      return fc.record({ ...run, now, tools: fc.array(toolDescriptor(), { maxLength: 3 }) });
    case 'after_inference':
      return fc.oneof(
        fc.record({
          ...run,
          now,
          messages,
          inference: fc.record({
            ok: fc.constant(true as const),
            inputTokens: fc.nat(10_000),
            outputTokens: fc.nat(10_000),
            text: fc.string({ maxLength: 20 }),
            toolNames: fc.array(id(), { maxLength: 2 }),
          }),
          llmResponse: fc.record(
            {
              content: fc.array(fc.record({ type: fc.constant('text' as const), text: fc.string({ maxLength: 20 }) }), { maxLength: 2 }),
              reasoning: fc.string({ maxLength: 10 }),
              toolCalls: fc.array(toolCall(), { maxLength: 2 }),
              usage: tokenUsage(),
              hasIncompleteToolCalls: fc.boolean(),
            },
            { requiredKeys: ['content', 'reasoning', 'toolCalls', 'hasIncompleteToolCalls'] },
          ),
        }),
        fc.record({
          ...run,
          now,
          messages,
          inference: fc.constant({ ok: false as const }),
          llmResponse: fc.record({ error: fc.record({ code: fc.constant('provider'), message: fc.string({ maxLength: 20 }) }) }),
        }),
      );
    case 'before_inference':
      return fc.record({ ...run, messages, tools: fc.array(toolDescriptor(), { maxLength: 3 }) });
    case 'before_tool_execute':
      return fc.record({ ...run, messages, toolCall: toolCall() });
    case 'after_tool_execute':
      return fc.record({ ...run, messages, toolCall: toolCall(), toolResult: fc.option(toolResult(), { nil: undefined }) });
    case 'step_start':
    case 'step_end':
    case 'run_end':
      return fc.record({ ...run, messages });
    default:
      return unreachable(phase);
  }
}

/** A command as data: its writes, the actions it schedules and the effects it asks for. */
export function commandData(c: StateCommand): { ops: unknown[]; actions: unknown[]; effects: unknown[] } {
  return {
    ops: c.patch.ops.map((op) => (op.kind === 'clear' ? { kind: 'clear', key: op.key } : { kind: 'update', key: op.key, update: op.update })),
    actions: c.scheduledActions.map((a) => ({ phase: a.phase, key: a.key, payload: a.payload })),
    effects: c.effects.map((e) => ({ key: e.key, payload: e.payload })),
  };
}

/** Fuzzes one plugin; see `FuzzPluginOptions`. */
export async function fuzzPlugin(plugin: Plugin, o: FuzzPluginOptions = {}): Promise<PluginFuzzReport> {
  const registrar = new PluginRegistrar(plugin.name);
  plugin.register(registrar);
  const failures: PluginFailure[] = [];
  const phases = PHASES.filter((p) => registrar.hooks.some((h) => h.phase === p));
  const ownKeys = new Map<string, AnyStateKey>(registrar.keys.map((k) => [k.key.key, k.key]));
  // `key=NAME@law@path` replays a key's law; `check@phase@path` a check of the hooks.
  const parts = o.path?.split('@') ?? [];
  const keyReplay = parts[0]?.startsWith('key=') === true ? { key: parts[0].slice(4), path: parts.slice(1).join('@') } : undefined;
  const replaying =
    o.path !== undefined && keyReplay === undefined && parts.length >= 3 ? { check: parts[0], phase: parts[1], path: parts.slice(2).join('@') } : undefined;

  if (registrar.errors.length > 0) {
    failures.push({
      plugin: plugin.name,
      check: 'registration',
      phase: undefined,
      counterexample: registrar.errors.map((e) => show(e)),
      seed: o.seed ?? 0,
      path: undefined,
    });
  }

  const keys: KeyLawReport[] = [];
  const unchecked: string[] = [];
  if (replaying === undefined) {
    for (const k of registrar.keys) {
      const update = o.updates?.[k.key.key];
      if (update === undefined) {
        unchecked.push(k.key.key);
        continue;
      }
      if (keyReplay !== undefined && keyReplay.key !== k.key.key) continue;
      const report = checkStateKeyLaws(k.key, {
        update,
        ...(k.options !== undefined ? { options: k.options } : {}),
        ...(o.numRuns !== undefined ? { numRuns: o.numRuns } : {}),
        ...(o.seed !== undefined ? { seed: o.seed } : {}),
        ...(keyReplay !== undefined ? { path: keyReplay.path } : {}),
      });
      // A key's failure replays through the plugin too: its path names the key.
      keys.push({ ...report, failures: report.failures.map((f) => ({ ...f, path: f.path !== undefined ? `key=${k.key.key}@${f.path}` : undefined })) });
    }
  }

  /** The plugin's keys with values reached by the updates given (the others at their initial value or absent). */
  const state = fc.record(
    Object.fromEntries(
      [...ownKeys.values()].map((k) => {
        const update = o.updates?.[k.key];
        const reached =
          update === undefined
            ? fc.constant(undefined)
            : fc.option(
                fc.array(update, { maxLength: 4 }).map((us) => us.reduce((v: unknown, u) => k.apply(v, u), k.init())),
                { nil: undefined },
              );
        return [k.key, reached];
      }),
    ),
  );

  /**
   * The plugin as the runtime under test registers it: its keys replaced by seedable twins (same
   * name, strategy, reducer and codec; an `apply` that also takes a whole value), so that a state
   * can be set up without an update that reaches it.
   */
  const seeding: Plugin = {
    name: plugin.name,
    register: (r) =>
      plugin.register(interceptRegistrar(r, { registerKey: (real, key: AnyStateKey, options?: object) => real.registerKey(seedable(key), options) })),
  };

  /** A phase runtime over the plugin (and the runtime's own action handlers), its keys seeded with `values`. */
  const runtimeWith = (values: Readonly<Record<string, unknown>>): PhaseRuntime => {
    const runtime = PhaseRuntime.create([loopStatePlugin, loopActionsPlugin, seeding], o.maxRounds !== undefined ? { maxRounds: o.maxRounds } : {});
    if (!runtime.ok) throw new Error(`the plugin does not install: ${show(runtime.error)}`);
    for (const [name, value] of Object.entries(values)) {
      const key = ownKeys.get(name);
      if (value === undefined || key === undefined) continue;
      // The store holds the plugin's own key; a seeded value is written through a seedable twin of it.
      const seeded = runtime.value.store.commit(new MutationBatch().update(seedable(key), seedOf(value)));
      if (!seeded.ok) throw new Error(`cannot seed ${name}: ${show(seeded.error)}`);
    }
    return runtime.value;
  };

  for (const phase of phases) {
    const params = { numRuns: o.numRuns ?? 100, ...(o.seed !== undefined ? { seed: o.seed } : {}) };
    const check = async (
      name: PluginCheck,
      body: (input: object, values: Record<string, unknown>, s: fc.Scheduler) => Promise<string[] | undefined>,
    ): Promise<void> => {
      if (replaying !== undefined && (replaying.check !== name || replaying.phase !== phase)) return;
      if (keyReplay !== undefined) return;
      let explained: string[] = [];
      const r = await fc.check(
        fc.asyncProperty(phaseInput(phase), state, fc.scheduler(), async (input, values, s) => {
          const why = await body(input, values, s);
          if (why === undefined) return true;
          explained = why;
          return false;
        }),
        replaying !== undefined ? { ...params, path: replaying.path } : params,
      );
      if (!r.failed) return;
      if (r.errorInstance !== null && explained.length === 0)
        explained = [`it throws: ${r.errorInstance instanceof Error ? r.errorInstance.message : String(r.errorInstance)}`];
      failures.push({
        plugin: plugin.name,
        check: name,
        phase,
        counterexample: explained,
        seed: r.seed,
        path: r.counterexamplePath !== null ? `${name}@${phase}@${r.counterexamplePath}` : undefined,
      });
    };
    const hooksOf = (runtime: PhaseRuntime) => (runtime.env.hooks.get(phase) ?? []).filter((h) => h.pluginId === plugin.name);
    const context = (runtime: PhaseRuntime, input: object): PhaseContext => ({ phase, snapshot: runtime.store.snapshot(), input }) as PhaseContext;
    const where = (input: object, values: Record<string, unknown>): string[] => [
      `phase:  ${phase}`,
      `state:  ${show(Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)))}`,
      `input:  ${show(input)}`,
    ];

    await check('deterministic', async (input, values, s) => {
      const runtime = runtimeWith(values);
      const ctx = context(runtime, input);
      const hooks = hooksOf(runtime);
      // As the engine calls them: every hook of the phase, in registration order, then their promises awaited together.
      const together = async (): Promise<unknown[]> => (await Promise.all(hooks.map((h) => h.hook(ctx)))).map((c) => commandData(commandOf(c)));
      const first = await together();
      const again = await together();
      if (!isDeepStrictEqual(first, again)) return [...where(input, values), `first call → ${show(first)}`, `same input again → ${show(again)}`];
      // Called in an order the scheduler picks, each released when it says (some finish before others start).
      const scheduled = hooks.map((h, i) => s.schedule(Promise.resolve(), `call ${h.pluginId}#${i + 1}`).then(() => h.hook(ctx)));
      await s.waitAll();
      const shuffled = (await Promise.all(scheduled)).map((c) => commandData(commandOf(c)));
      if (!isDeepStrictEqual(first, shuffled))
        return [
          ...where(input, values),
          `called together, in registration order → ${show(first)}`,
          `${s
            .report()
            .map((r) => r.label)
            .join(', ')} → ${show(shuffled)}`,
        ];
      return undefined;
    });

    await check('own-keys', async (input, values) => {
      const runtime = runtimeWith(values);
      const ctx = context(runtime, input);
      for (const h of hooksOf(runtime)) {
        const foreign = commandOf(await h.hook(ctx))
          .patch.ops.map((op) => op.key)
          .filter((k) => !ownKeys.has(k));
        if (foreign.length > 0)
          return [
            ...where(input, values),
            `writes ${[...new Set(foreign)].join(', ')}, which it did not register (it registered ${[...ownKeys.keys()].join(', ') || 'no key'})`,
          ];
      }
      return undefined;
    });

    await check('converges', async (input, values) => {
      const runtime = runtimeWith(values);
      const r = await runtime.runPhase(phase, { input });
      if (!r.ok && r.error.code === 'phase_run_loop_exceeded')
        return [...where(input, values), `its actions are still scheduling work after ${runtime.maxRounds} rounds`];
      return undefined;
    });
  }
  return { plugin: plugin.name, phases, keys, unchecked, failures, passed: failures.length === 0 && keys.every((k) => k.passed) };
}

/** A report as text: the laws per key, each check's failures with the counterexample and how to replay it. */
export function describePluginFuzz(report: PluginFuzzReport, describeKey: (k: KeyLawReport) => string): string {
  const lines = [`plugin ${report.plugin}: ${report.passed ? 'passed' : 'FAILED'} — hooks in ${report.phases.join(', ') || 'no phase'}`];
  for (const k of report.keys) lines.push(describeKey(k).trimEnd());
  for (const u of report.unchecked) lines.push(`${u}: laws not checked (no updates given for it)`);
  for (const f of report.failures) {
    lines.push(`  ✗ ${f.check}${f.phase !== undefined ? ` in ${f.phase}` : ''}`);
    for (const c of f.counterexample) lines.push(`      ${c}`);
    if (f.path !== undefined) lines.push(`      reproduce: seed ${f.seed}, path "${f.path}"`);
  }
  return `${lines.join('\n')}\n`;
}
