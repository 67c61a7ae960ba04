import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ToolDescriptor } from '../../../src/contract/tool.ts';
import {
  DeferredToolsConfigSchema,
  emptyPriors,
  emptyUsage,
  ewmaLambda,
  incrementTurn,
  newDiscBetaEntry,
  planActivation,
  priorOf,
  recordCall,
  resolveMode,
  schemaCosts,
  shouldEnable,
  toolsToDefer,
  updatePriors,
  usedThisTurn,
  type AgentToolPriors,
  type UsageStats,
} from '../../../src/core/deferral/index.ts';
import { wildcardMatch as globMatch } from '../../../src/core/pattern/index.ts';

const tool = (id: string, props = 20): ToolDescriptor => ({
  id,
  name: id,
  description: `${id} tool`,
  parameters: {
    type: 'object',
    properties: Object.fromEntries(Array.from({ length: props }, (_, i) => [`field_${i}`, { type: 'string', description: 'a field' }])),
  },
});

describe('rules (book: 配置工具加载规则)', () => {
  it("glob patterns (the rules' dialect, core/pattern): * ? [class] [!class] and escapes, on code points", () => {
    expect(globMatch('debug_*', 'debug_dump')).toBe(true);
    expect(globMatch('debug_*', 'xdebug_dump')).toBe(false);
    expect(globMatch('*_v?', 'tool_v2')).toBe(true);
    expect(globMatch('*_v?', 'tool_v10')).toBe(false);
    expect(globMatch('[a-c]*', 'beta')).toBe(true);
    expect(globMatch('[!a-c]*', 'beta')).toBe(false);
    expect(globMatch('a\\*b', 'a*b')).toBe(true);
    expect(globMatch('a\\*b', 'axb')).toBe(false);
    expect(globMatch('wetter_größe', 'wetter_größe')).toBe(true);
    expect(globMatch('*', '')).toBe(true);
    // An unclosed class is no glob; a rule naming such an id still matches it exactly.
    expect(globMatch('[ab', '[ab')).toBe(false);
    expect(resolveMode(DeferredToolsConfigSchema.parse({ rules: [{ tool: '[ab', mode: 'eager' }] }), '[ab')).toBe('eager');
    expect(globMatch('mcp/**', 'mcp/a/b')).toBe(true);
  });

  it('the first matching rule wins, else default_mode', () => {
    const config = DeferredToolsConfigSchema.parse({
      rules: [
        { tool: 'get_weather', mode: 'eager' },
        { tool: 'get_*', mode: 'deferred' },
        { tool: '*', mode: 'eager' },
      ],
      default_mode: 'deferred',
    });
    expect(resolveMode(config, 'get_weather')).toBe('eager');
    expect(resolveMode(config, 'get_news')).toBe('deferred');
    expect(resolveMode(config, 'other')).toBe('eager');
    expect(resolveMode(DeferredToolsConfigSchema.parse({}), 'x')).toBe('deferred');
  });

  it('auto-enables only when the savings strictly exceed beta_overhead', () => {
    const auto = DeferredToolsConfigSchema.parse({});
    expect(shouldEnable(auto, 1136)).toBe(false);
    expect(shouldEnable(auto, 1137)).toBe(true);
    expect(shouldEnable({ ...auto, enabled: false }, 1e9)).toBe(false);
    expect(shouldEnable({ ...auto, enabled: true }, 0)).toBe(true);
  });

  it('rejects a bad section with the field named', () => {
    const r = DeferredToolsConfigSchema.safeParse({ disc_beta: { omega: 0 } });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['disc_beta', 'omega']);
  });
});

describe('activation', () => {
  it('classifies tools, sums the savings of the deferred ones, skips ToolSearch', () => {
    const tools = [tool('a'), tool('b'), tool('ToolSearch')];
    const config = DeferredToolsConfigSchema.parse({ rules: [{ tool: 'a', mode: 'eager' }] });
    const act = planActivation(tools, config, undefined);
    const { c, c_bar } = schemaCosts(tool('b'));
    expect(act.modes).toEqual({ a: 'eager', b: 'deferred' });
    expect(act.registry.map((t) => t.id)).toEqual(['b']);
    expect(act.totalSavings).toBeCloseTo(c - c_bar, 9);
    expect(act.enabled).toBe(c - c_bar > 1136);
    expect(act.entries['b']).toEqual(newDiscBetaEntry(0.01, 5, c, c_bar));
  });

  it('costs a schema max(bytes / 4, 10) and a name max(bytes / 4, 1)', () => {
    expect(schemaCosts({ id: 'x', name: 'x', description: '', parameters: {} })).toEqual({ c: 10, c_bar: 1 });
    expect(schemaCosts({ id: 'x', name: 'abcdefgh', description: '', parameters: { a: 'x'.repeat(100) } })).toEqual({ c: 108 / 4, c_bar: 2 });
  });
});

describe('usage statistics', () => {
  it('counts presence once per turn and calls every time', () => {
    let s = emptyUsage();
    s = recordCall(recordCall(s, 'a'), 'a');
    expect(usedThisTurn(s)).toEqual(['a']);
    s = incrementTurn(s);
    expect(usedThisTurn(s)).toEqual([]);
    s = recordCall(s, 'a');
    expect(s.tools['a']).toEqual({ turn_presence_count: 2, total_call_count: 3, first_use_turn: 0, last_use_turn: 1 });
  });
});

describe('cross-session priors (EWMA)', () => {
  const stats = (turns: number, presence: Record<string, number>): UsageStats => ({
    total_turns: turns,
    tools: Object.fromEntries(
      Object.entries(presence).map(([id, n]) => [id, { turn_presence_count: n, total_call_count: n, first_use_turn: 0, last_use_turn: 0 }]),
    ),
  });

  it('λ = max(0.1, 1 / (n + 1))', () => {
    expect(ewmaLambda(0)).toBe(1);
    expect(ewmaLambda(3)).toBe(0.25);
    expect(ewmaLambda(50)).toBe(0.1);
  });

  it('folds each session as (1 − λ)·p₀ + λ·p_s; sessions with no turn change nothing', () => {
    let p = updatePriors(emptyPriors(), stats(4, { a: 2 }));
    expect(p).toEqual({ tools: { a: 0.5 }, session_count: 1 });
    p = updatePriors(p, stats(4, { a: 4, b: 1 }));
    expect(p.tools['a']).toBeCloseTo(0.5 * 0.5 + 0.5 * 1, 12);
    expect(p.tools['b']).toBeCloseTo(0.25, 12);
    expect(p.session_count).toBe(2);
    expect(updatePriors(p, stats(0, {}))).toBe(p);
  });

  it('priors change the first decisions exactly as the EWMA says', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ turns: fc.integer({ min: 1, max: 20 }), used: fc.integer({ min: 0, max: 20 }) }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 0, max: 30 }),
        (sessions, turn) => {
          let priors: AgentToolPriors = emptyPriors();
          let expected: number | undefined;
          sessions.forEach((s, n) => {
            const ps = Math.min(s.used, s.turns) / s.turns;
            const lambda = Math.max(0.1, 1 / (n + 1));
            expected = expected === undefined ? ps : (1 - lambda) * expected + lambda * ps;
            priors = updatePriors(priors, stats(s.turns, { t: Math.min(s.used, s.turns) }));
          });
          expect(priorOf('t', DeferredToolsConfigSchema.parse({}), priors)).toBeCloseTo(expected as number, 12);
          const config = DeferredToolsConfigSchema.parse({ enabled: true, disc_beta: { defer_after: 0 } });
          const act = planActivation([tool('t', 60)], config, priors);
          const entry = act.entries['t'];
          expect(entry).toEqual(newDiscBetaEntry(expected as number, 5, entry?.c as number, entry?.c_bar as number));
          // The first decision is the one the learned prior implies.
          const withPrior = toolsToDefer(act.entries, { t: 'eager' }, config, turn);
          const fromScratch = toolsToDefer(
            { t: newDiscBetaEntry(expected as number, 5, entry?.c as number, entry?.c_bar as number) },
            { t: 'eager' },
            config,
            turn,
          );
          expect(withPrior).toEqual(fromScratch);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a learned prior moves a decision the default prior would make', () => {
    const config = DeferredToolsConfigSchema.parse({ enabled: true, disc_beta: { defer_after: 0 } });
    const t = tool('t', 30);
    const fresh = planActivation([t], config, undefined);
    const learned = planActivation([t], config, { tools: { t: 0.9 }, session_count: 3 });
    expect(toolsToDefer(fresh.entries, { t: 'eager' }, config, 0)).toEqual(['t']);
    expect(toolsToDefer(learned.entries, { t: 'eager' }, config, 0)).toEqual([]);
    // Configured priors count when nothing is learned.
    expect(priorOf('t', DeferredToolsConfigSchema.parse({ agent_priors: { t: 0.4 } }), undefined)).toBe(0.4);
    expect(priorOf('t', DeferredToolsConfigSchema.parse({ agent_priors: { t: 0.4 } }), emptyPriors())).toBe(0.4);
  });
});
