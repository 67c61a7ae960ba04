import { z } from 'zod';
import { definePluginConfigKey, readPluginConfig } from '../contract/agent-spec.ts';
import { fieldIssues } from '../contract/issue-line.ts';
import type { JsonValue } from '../contract/json.ts';
import type { ToolResult } from '../contract/tool.ts';
import {
  compileOp,
  compileRegex,
  compilePattern,
  parsePattern,
  PatternTextSchema,
  resolvePath,
  valueToString,
  wildcardMatch,
  type MatchOp,
  type PatternMatcher,
} from '../core/pattern/index.ts';
import { StateCommand } from '../core/state/state-command.ts';
import { AddContextMessage } from '../runtime/builtin-plugins.ts';
import { ContextTargetSchema, type ContextMessage } from '../runtime/loop-keys.ts';
import type { RuntimePlugin } from '../runtime/resolve.ts';
import { perAgentSpec } from './per-spec.ts';

/**
 * The reminder plugin (book: 使用 Reminder 插件; core-spec §9): after a tool call whose call matches
 * a rule's tool pattern and whose result matches its output matcher, a context message is injected
 * at the next inference (then consumed), at most once per `cooldown_turns` steps. Every rule that
 * matches fires, in order. Rules are checked when the agent is built: one that does not parse
 * stops the build, naming it.
 */

const OpSchema = z.enum(['glob', 'exact', 'regex', 'not_glob', 'not_exact', 'not_regex']);

/** `{path: "a.b.c", op, value}`: a condition on the result's data (dot-separated field names). */
const FieldEntrySchema = z
  .object({
    path: z.string().regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'a dot-separated path of field names'),
    op: OpSchema.default('glob'),
    value: z.string(),
  })
  .strict()
  .superRefine((f, ctx) => {
    if ((f.op === 'regex' || f.op === 'not_regex') && !compileRegex(f.value).ok)
      ctx.addIssue({ code: 'custom', path: ['value'], message: `invalid regex: ${(compileRegex(f.value) as { message: string }).message}` });
  });

/**
 * A string, or an object read with `schema`: errors of the object name its own fields (a plain
 * union would say only "Invalid input" at the top).
 */
function stringOr<S extends string, T extends z.ZodType>(strings: (v: string) => string | undefined, schema: T) {
  return z.unknown().transform((v, ctx): S | z.output<T> => {
    if (typeof v === 'string') {
      const why = strings(v);
      if (why === undefined) return v as S;
      ctx.addIssue({ code: 'custom', message: why });
      return z.NEVER;
    }
    const r = schema.safeParse(v);
    if (r.success) return r.data as z.output<T>;
    for (const issue of fieldIssues(r.error)) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path as (string | number)[] });
    return z.NEVER;
  });
}

/** A string is a glob over the result's text (its data; for an error, its message too); `{fields}` conditions on its data. */
const ContentSchema = stringOr<string, z.ZodType<{ fields: z.output<typeof FieldEntrySchema>[] }>>(
  () => undefined,
  z.object({ fields: z.array(FieldEntrySchema).min(1) }).strict() as never,
);

const OutputSchema = stringOr<'any', z.ZodType<{ status?: 'success' | 'error' | 'pending' | 'any'; content?: z.output<typeof ContentSchema> }>>(
  (v) => (v === 'any' ? undefined : `${JSON.stringify(v)}: an output is "any" or {status, content}`),
  z.object({ status: z.enum(['success', 'error', 'pending', 'any']).optional(), content: ContentSchema.optional() }).strict() as never,
);

export const ReminderRuleEntrySchema = z
  .object({
    name: z.string().min(1).optional(),
    tool: PatternTextSchema,
    output: OutputSchema.default('any'),
    message: z.object({ target: ContextTargetSchema, content: z.string(), cooldown_turns: z.number().int().nonnegative().default(0) }).strict(),
  })
  .strict();
export type ReminderRuleEntry = z.input<typeof ReminderRuleEntrySchema>;

export const ReminderConfigSchema = z.object({ rules: z.array(ReminderRuleEntrySchema).default([]) }).strict();
export type ReminderConfig = z.output<typeof ReminderConfigSchema>;

export const ReminderConfigKey = definePluginConfigKey('reminder', ReminderConfigSchema as z.ZodType<ReminderConfig>, () => ReminderConfigSchema.parse({}));

type OutputTest = (result: ToolResult) => boolean;

/** A compiled rule: when it fires and what it says. */
export interface ReminderRule {
  readonly name: string;
  readonly matches: PatternMatcher;
  readonly output: OutputTest;
  readonly message: ContextMessage;
}

/** A glob over a result as text: its data (null → ""), or, for an error, its message (0.6 sees only the data ⟂). */
export const resultTextMatches = (glob: string, r: ToolResult): boolean =>
  wildcardMatch(glob, valueToString(r.data)) || (r.status === 'error' && typeof r.message === 'string' && wildcardMatch(glob, r.message));

function contentTest(content: z.output<typeof ContentSchema>): OutputTest {
  if (typeof content === 'string') return (r) => resultTextMatches(content, r);
  const conditions = content.fields.map((f) => ({
    path: f.path.split('.').map((name) => ({ kind: 'field' as const, name })),
    test: compileOp(f.op as MatchOp, f.value),
  }));
  return (r) => r.data !== null && conditions.every((c) => resolvePath(r.data, c.path).some((v: JsonValue) => c.test(valueToString(v))));
}

function outputTest(output: z.output<typeof OutputSchema>): OutputTest {
  if (output === 'any') return () => true;
  const status = output.status === undefined || output.status === 'any' ? undefined : output.status;
  const content = output.content === undefined ? undefined : contentTest(output.content);
  return (r) => (status === undefined || r.status === status) && (content === undefined || content(r));
}

/** The rules of a (parsed) config, in order; a rule's name defaults to `rule-<index>-<tool>`. */
export function compileReminderRules(config: ReminderConfig): ReminderRule[] {
  return config.rules.map((entry, i) => {
    const name = entry.name ?? `rule-${i}-${entry.tool}`;
    const parsed = parsePattern(entry.tool);
    return {
      name,
      matches: parsed.ok ? compilePattern(parsed.value) : () => undefined,
      output: outputTest(entry.output),
      message: {
        key: `reminder.${name}`,
        role: 'system',
        content: entry.message.content,
        target: entry.message.target,
        cooldown_turns: entry.message.cooldown_turns,
        priority: 0,
        persistent: false,
      },
    };
  });
}

export const REMINDER_PLUGIN_ID = 'reminder';

/**
 * The plugin: the agent's `reminder` section, after the rules given here (code-defined rules, as
 * 0.6's constructor rules). The catalog holds the one without code rules.
 */
export function reminderPlugin(rules: readonly ReminderRuleEntry[] = []): RuntimePlugin {
  const own = ReminderConfigSchema.parse({ rules }).rules;
  const rulesOf = perAgentSpec((spec): readonly ReminderRule[] => {
    const config = readPluginConfig(spec, ReminderConfigKey);
    // An unreadable section never gets here: the agent does not build (invalid_plugin_config).
    // One list, so default names (`rule-<index>-<tool>`) never collide between the two.
    return compileReminderRules({ rules: [...own, ...(config.ok ? config.value.rules : [])] });
  });
  return {
    name: REMINDER_PLUGIN_ID,
    configKeys: [ReminderConfigKey as never],
    register: (r) =>
      r.registerPhaseHook('after_tool_execute', (ctx) => {
        const { toolCall, toolResult } = ctx.input;
        const cmd = StateCommand.empty();
        if (toolResult === undefined) return cmd;
        for (const rule of rulesOf(ctx.input.agentSpec)) {
          if (rule.matches(toolCall.name, toolCall.arguments) !== undefined && rule.output(toolResult)) cmd.scheduleAction(AddContextMessage, rule.message);
        }
        return cmd;
      }),
  };
}
