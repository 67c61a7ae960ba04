import { z } from 'zod';
import { definePluginConfigKey, readPluginConfig } from '../contract/agent-spec.ts';
import type { JsonValue } from '../contract/json.ts';
import type { ToolCall } from '../contract/message.ts';
import {
  compareSpecificity,
  compilePattern,
  formatPattern,
  parsePattern,
  PatternTextSchema,
  type PatternMatcher,
  type Specificity,
} from '../core/pattern/index.ts';
import type { PhaseContext } from '../core/phase/plugin.ts';
import type { Snapshot } from '../core/state/snapshot.ts';
import { StateCommand } from '../core/state/state-command.ts';
import { defineStateKey } from '../core/state/state-key.ts';
import { ExcludeTool, ToolInterceptAction } from '../runtime/builtin-plugins.ts';
import type { RuntimePlugin } from '../runtime/resolve.ts';
import { perAgentSpec } from './per-spec.ts';
import { unreachable } from '../contract/never.ts';

/**
 * The permission plugin (book: 权限; core-spec §8.4–8.6). Every tool call is allowed, denied, or
 * asked about, by rules written as tool patterns (docs/plugins/tool-patterns.md). Rules come from
 * the agent's `permission` section, from the thread's persistent policy (`permission_policy`,
 * changed by `PermissionAction`s), and from run-scoped overrides (`permission_overrides`, e.g.
 * granted by a skill); a later layer replaces a rule of the same subject. Among the rules that
 * match a call, deny beats allow beats ask, then the more specific rule wins, then (an exact tie)
 * the smaller subject key. No rule: the default behaviour (the policy's, else the section's, else
 * ask). While it is active, nothing else grants a call: other gates can only narrow.
 */

export const PermissionBehaviorSchema = z.enum(['allow', 'ask', 'deny']);
export type PermissionBehavior = z.infer<typeof PermissionBehaviorSchema>;
export const RuleScopeSchema = z.enum(['once', 'session', 'thread', 'project', 'user']);
export const RuleSourceSchema = z.enum(['system', 'definition', 'skill', 'session', 'user', 'cli', 'runtime']);

/** What a rule is about: one tool id (exact), or a tool pattern (its printed form). */
export const PermissionSubjectSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('tool'), tool_id: z.string().min(1) }).strict(),
  z.object({ kind: z.literal('pattern'), pattern: PatternTextSchema }).strict(),
]);
export type PermissionSubject = { readonly kind: 'tool'; readonly tool_id: string } | { readonly kind: 'pattern'; readonly pattern: string };

export const PermissionRuleSchema = z
  .object({
    subject: PermissionSubjectSchema,
    behavior: PermissionBehaviorSchema,
    scope: RuleScopeSchema.default('thread'),
    source: RuleSourceSchema.default('runtime'),
  })
  .strict();
export interface PermissionRule {
  readonly subject: PermissionSubject;
  readonly behavior: PermissionBehavior;
  readonly scope: z.infer<typeof RuleScopeSchema>;
  readonly source: z.infer<typeof RuleSourceSchema>;
}

/** `tool:<id>` or `pattern:<printed pattern>`: a rule with the same key replaces the earlier one. */
export const subjectKey = (s: PermissionSubject): string => (s.kind === 'tool' ? `tool:${s.tool_id}` : `pattern:${s.pattern}`);

// ---- config --------------------------------------------------------------------------------------

export const PermissionConfigSchema = z
  .object({
    default_behavior: PermissionBehaviorSchema.default('ask'),
    rules: z.array(z.object({ tool: PatternTextSchema, behavior: PermissionBehaviorSchema, scope: RuleScopeSchema.default('project') }).strict()).default([]),
  })
  .strict();
export type PermissionConfig = z.output<typeof PermissionConfigSchema>;
export type PermissionConfigInput = z.input<typeof PermissionConfigSchema>;

/** The `permission` section; an entry that does not parse makes the agent fail to resolve, naming it. */
export const PermissionConfigKey = definePluginConfigKey('permission', PermissionConfigSchema as z.ZodType<PermissionConfig>, () =>
  PermissionConfigSchema.parse({}),
);

// ---- state ---------------------------------------------------------------------------------------

/**
 * A change to the policy or the overrides (serde tag `type`, as 0.6). `set_default` means nothing to
 * the overrides. Build them with `PermissionActionSchema.parse(json)` (a pattern that does not parse
 * is refused there, naming it) or by hand with a pattern `formatPattern` printed.
 */
export const PermissionActionSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('set_default'), behavior: PermissionBehaviorSchema }).strict(),
  z.object({ type: z.literal('set_tool'), tool_id: z.string().min(1), behavior: PermissionBehaviorSchema }).strict(),
  z.object({ type: z.literal('set_rule'), pattern: PatternTextSchema, behavior: PermissionBehaviorSchema }).strict(),
  z.object({ type: z.literal('remove_tool'), tool_id: z.string().min(1) }).strict(),
  z.object({ type: z.literal('remove_rule'), pattern: PatternTextSchema }).strict(),
  z.object({ type: z.literal('clear_tools') }).strict(),
  z.object({ type: z.literal('allow_tool'), tool_id: z.string().min(1) }).strict(),
  z.object({ type: z.literal('deny_tool'), tool_id: z.string().min(1) }).strict(),
]);
export type PermissionAction = z.output<typeof PermissionActionSchema>;

export interface PermissionRules {
  readonly rules: Readonly<Record<string, PermissionRule>>;
}
export interface PermissionPolicyValue extends PermissionRules {
  /** Set by `set_default`; absent → the section's `default_behavior`. */
  readonly default_behavior?: PermissionBehavior;
}

/** The printed form of a pattern text, or undefined when it does not parse (unreachable through the schema). */
const canonical = (text: string): string | undefined => {
  const parsed = parsePattern(text);
  return parsed.ok ? formatPattern(parsed.value) : undefined;
};

function reduceRules(
  rules: Readonly<Record<string, PermissionRule>>,
  action: PermissionAction,
  source: PermissionRule['source'],
): Readonly<Record<string, PermissionRule>> {
  const put = (subject: PermissionSubject, behavior: PermissionBehavior) => ({
    ...rules,
    [subjectKey(subject)]: { subject, behavior, scope: 'thread' as const, source },
  });
  const drop = (key: string) => {
    if (!Object.hasOwn(rules, key)) return rules;
    const next = { ...rules };
    delete next[key];
    return next;
  };
  switch (action.type) {
    case 'set_tool':
      return put({ kind: 'tool', tool_id: action.tool_id }, action.behavior);
    case 'allow_tool':
      return put({ kind: 'tool', tool_id: action.tool_id }, 'allow');
    case 'deny_tool':
      return put({ kind: 'tool', tool_id: action.tool_id }, 'deny');
    case 'set_rule': {
      const pattern = canonical(action.pattern);
      return pattern === undefined ? rules : put({ kind: 'pattern', pattern }, action.behavior);
    }
    case 'remove_tool':
      return drop(subjectKey({ kind: 'tool', tool_id: action.tool_id }));
    case 'remove_rule': {
      const pattern = canonical(action.pattern);
      return pattern === undefined ? rules : drop(subjectKey({ kind: 'pattern', pattern }));
    }
    case 'clear_tools':
      return {};
    case 'set_default':
      return rules;
    default:
      return unreachable(action);
  }
}

const RulesRecordSchema = z.record(z.string(), PermissionRuleSchema) as unknown as z.ZodType<Readonly<Record<string, PermissionRule>>>;

/** `permission_policy`: the thread's rules and default, persistent (0.6: Thread scope). */
export const PermissionPolicy = defineStateKey<PermissionPolicyValue, PermissionAction>({
  key: 'permission_policy',
  init: () => ({ rules: {} }),
  apply: (v, a) => (a.type === 'set_default' ? { ...v, default_behavior: a.behavior } : { ...v, rules: reduceRules(v.rules, a, 'runtime') }),
  codec: z.object({ default_behavior: PermissionBehaviorSchema.optional(), rules: RulesRecordSchema }).strict() as z.ZodType<PermissionPolicyValue>,
});

/** `permission_overrides`: rules for this run only (not persisted), on top of the policy (source `skill`). */
export const PermissionOverrides = defineStateKey<PermissionRules, PermissionAction>({
  key: 'permission_overrides',
  init: () => ({ rules: {} }),
  apply: (v, a) => ({ rules: reduceRules(v.rules, a, 'skill') }),
  codec: z.object({ rules: RulesRecordSchema }).strict() as z.ZodType<PermissionRules>,
});

// ---- evaluation ----------------------------------------------------------------------------------

export interface PermissionRuleset {
  readonly default_behavior: PermissionBehavior;
  readonly rules: Readonly<Record<string, PermissionRule>>;
}

/** The section's rules, then the policy's, then the overrides' (each replacing a rule of the same key). */
export function effectiveRuleset(
  config: PermissionConfig,
  policy: PermissionPolicyValue | undefined,
  overrides: PermissionRules | undefined,
): PermissionRuleset {
  const rules: Record<string, PermissionRule> = {};
  for (const entry of config.rules) {
    const subject: PermissionSubject = { kind: 'pattern', pattern: entry.tool };
    rules[subjectKey(subject)] = { subject, behavior: entry.behavior, scope: entry.scope, source: 'definition' };
  }
  Object.assign(rules, policy?.rules ?? {}, overrides?.rules ?? {});
  return { default_behavior: policy?.default_behavior ?? config.default_behavior, rules };
}

const PRIORITY: Readonly<Record<PermissionBehavior, number>> = { ask: 0, allow: 1, deny: 2 };
const EXACT_TOOL: Specificity = { toolKind: 3, hasArgs: false, fieldCount: 0, fieldPrecision: 0 };

/** Compiled patterns by printed form (a pure function of the text, kept for the next call). */
const compiled = new Map<string, PatternMatcher>();
function matcherOf(pattern: string): PatternMatcher {
  let m = compiled.get(pattern);
  if (m === undefined) {
    const parsed = parsePattern(pattern);
    m = parsed.ok ? compilePattern(parsed.value) : () => undefined;
    if (compiled.size >= 4096) compiled.clear();
    compiled.set(pattern, m);
  }
  return m;
}

const specificityOf = (subject: PermissionSubject, toolId: string, args: JsonValue): Specificity | undefined =>
  subject.kind === 'tool' ? (subject.tool_id === toolId ? EXACT_TOOL : undefined) : matcherOf(subject.pattern)(toolId, args);

export interface PermissionEvaluation {
  readonly behavior: PermissionBehavior;
  /** The rule that decided (absent: the default decided). */
  readonly matched?: { readonly key: string; readonly rule: PermissionRule };
}

/** Deny > allow > ask among the matching rules, then specificity, then the smaller key; no match → the default. */
export function evaluatePermission(ruleset: PermissionRuleset, toolId: string, args: JsonValue): PermissionEvaluation {
  let best: { key: string; rule: PermissionRule; s: Specificity } | undefined;
  for (const key of Object.keys(ruleset.rules)) {
    const rule = ruleset.rules[key] as PermissionRule;
    const s = specificityOf(rule.subject, toolId, args);
    if (s === undefined) continue;
    const order = best === undefined ? 1 : PRIORITY[rule.behavior] - PRIORITY[best.rule.behavior] || compareSpecificity(s, best.s) || (key < best.key ? 1 : -1);
    if (order > 0) best = { key, rule, s };
  }
  return best === undefined ? { behavior: ruleset.default_behavior } : { behavior: best.rule.behavior, matched: { key: best.key, rule: best.rule } };
}

/** Tools every call of which is denied (a deny rule on the tool with no argument condition), among `toolIds`, sorted. */
export function unconditionallyDenied(ruleset: PermissionRuleset, toolIds: readonly string[]): string[] {
  const out = new Set<string>();
  for (const rule of Object.values(ruleset.rules)) {
    if (rule.behavior !== 'deny') continue;
    if (rule.subject.kind === 'tool') {
      if (toolIds.includes(rule.subject.tool_id)) out.add(rule.subject.tool_id);
      continue;
    }
    const parsed = parsePattern(rule.subject.pattern);
    if (!parsed.ok || parsed.value.args.kind !== 'any') continue;
    const m = matcherOf(rule.subject.pattern);
    for (const id of toolIds) if (m(id, null) !== undefined) out.add(id);
  }
  return [...out].sort();
}

// ---- the plugin ----------------------------------------------------------------------------------

const configOf = perAgentSpec((spec): PermissionConfig => {
  const r = readPluginConfig(spec, PermissionConfigKey);
  // An unreadable section never gets here: the agent does not resolve (invalid_plugin_config).
  return r.ok ? r.value : PermissionConfigSchema.parse({ default_behavior: 'deny' });
});

const rulesetOf = (ctx: PhaseContext, snapshot: Snapshot): PermissionRuleset =>
  effectiveRuleset(configOf(ctx.input.agentSpec), snapshot.get(PermissionPolicy), snapshot.get(PermissionOverrides));

/** The ticket of an `ask`: the client confirms (the call then runs as it was) or cancels it. */
export function permissionTicket(call: ToolCall) {
  return {
    suspension: { id: `perm_${call.id}`, action: 'tool:PermissionConfirm', message: `Permission required for tool '${call.name}'`, parameters: call.arguments },
    pending: { id: call.id, name: 'permission_confirm', arguments: call.arguments },
    resume_mode: 'replay_tool_call' as const,
  };
}

export const PERMISSION_PLUGIN_ID = 'permission';

export const permissionPlugin: RuntimePlugin = {
  name: PERMISSION_PLUGIN_ID,
  configKeys: [PermissionConfigKey as never],
  register: (r) => {
    r.registerKey(PermissionPolicy, { scope: 'thread', persistent: true });
    r.registerKey(PermissionOverrides, { scope: 'run', persistent: false });

    // The filter: a tool every call of which would be denied is not offered to the model.
    r.registerPhaseHook('before_inference', (ctx) => {
      const cmd = StateCommand.empty();
      const denied = unconditionallyDenied(
        rulesetOf(ctx, ctx.snapshot),
        ctx.input.tools.map((t) => t.id),
      );
      for (const id of denied) cmd.scheduleAction(ExcludeTool, id);
      return cmd;
    });

    // The gate: allow → nothing; deny → blocked with the reason; ask → suspended until a decision.
    r.registerPhaseHook('before_tool_execute', (ctx) => {
      const call = ctx.input.toolCall;
      const { behavior } = evaluatePermission(rulesetOf(ctx, ctx.snapshot), call.name, call.arguments);
      if (behavior === 'allow') return StateCommand.empty();
      const intercept =
        behavior === 'deny'
          ? { type: 'block' as const, reason: `Tool '${call.name}' denied by permission rules` }
          : { type: 'suspend' as const, ticket: permissionTicket(call) };
      return StateCommand.empty().scheduleAction(ToolInterceptAction, { call_id: call.id, intercept });
    });
  },
};
