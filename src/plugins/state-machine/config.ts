import { z } from 'zod';
import { parse as parseYaml } from 'yaml';
import { issueLine } from '../../contract/issue-line.ts';
import type { JsonValue } from '../../contract/json.ts';
import { err, ok, type Result } from '../../contract/result.ts';
import { describeParseError, formatPattern, parsePattern, type PathSegment } from '../../core/pattern/index.ts';
import { ContextTargetSchema } from '../../runtime/loop-keys.ts';

/**
 * The DSL of seed 004 (用状态机约束工具调用顺序): `machines[]` and a shared `continuation`. Patterns
 * and templates are checked here, once; an error names the machine, the transition and the field.
 */

const StatusSchema = z.enum(['success', 'error', 'pending', 'any']);

/** `any`, `success`, `error`, or `{status, content}` (content: a glob over the stringified result). */
const WhenSchema = z.union([z.enum(['any', 'success', 'error']), z.object({ status: StatusSchema.optional(), content: z.string().optional() }).strict()]);
export type When = z.output<typeof WhenSchema>;

const EmitSchema = z
  .object({
    target: ContextTargetSchema,
    content: z.string(),
    cooldown_turns: z.number().int().nonnegative().default(0),
    /** For the positional targets (session, conversation) only: who says it. */
    role: z.enum(['user', 'assistant']).optional(),
  })
  .strict();

const ViolationSchema = z.object({ action: z.enum(['deny', 'ask', 'warn']).default('deny'), reason: z.string().optional() }).strict();

const TransitionSchema = z
  .object({
    on: z.string().min(1),
    from: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
    to: z.string().min(1),
    when: WhenSchema.default('success'),
    emit: EmitSchema.optional(),
    on_violation: ViolationSchema.optional(),
  })
  .strict();

export const MachineEntrySchema = z
  .object({
    name: z.string().min(1),
    scope: z.enum(['thread', 'run']).default('thread'),
    key: z.string().default(''),
    key_normalizer: z.enum(['none', 'trim', 'lowercase', 'path', 'url']).default('none'),
    initial: z.string().min(1),
    strict: z.boolean().default(false),
    on_unmatched: z.string().min(1).nullable().default(null),
    terminal: z.array(z.string().min(1)).default([]),
    transitions: z.array(TransitionSchema).min(1),
  })
  .strict();
export type MachineEntry = z.output<typeof MachineEntrySchema>;

export const ContinuationSchema = z
  .object({
    /** How many times the run-end guard may send the model back; 0 turns the guard off. */
    max_continuations: z.number().int().nonnegative().default(0),
    message: z.string().default('Finish the protocol work: {summary}'),
  })
  .strict();

export const StateMachineConfigSchema = z
  .object({
    machines: z.array(MachineEntrySchema).default([]),
    continuation: ContinuationSchema.optional(),
  })
  .strict()
  .superRefine((config, ctx) => {
    for (const problem of problemsOf(config)) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
  });
export type StateMachineConfig = z.output<typeof StateMachineConfigSchema>;
export type StateMachineConfigInput = z.input<typeof StateMachineConfigSchema>;

// ---- templates ---------------------------------------------------------------------------------------

/** A template: literal text and `{path}` holes (`{file_path}`, `{target.path}`, `{items[0].name}`). */
export type Template = readonly (string | { readonly path: readonly PathSegment[]; readonly text: string })[];

const HOLE = /\{([^{}]*)\}/g;

/** Parses a template; a hole that is not a path (`a.b[0].c`) is an error naming it. */
export function parseTemplate(text: string): Result<Template, string> {
  const parts: (string | { path: PathSegment[]; text: string })[] = [];
  let last = 0;
  for (const m of text.matchAll(HOLE)) {
    const inner = (m[1] as string).trim();
    if (m.index > last) parts.push(text.slice(last, m.index));
    const path = parsePath(inner);
    if (path === undefined) return err(`{${m[1] as string}} is not a path (name, a.b, items[0].name)`);
    parts.push({ path, text: m[0] });
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return ok(parts);
}

function parsePath(text: string): PathSegment[] | undefined {
  if (!/^[A-Za-z0-9_-]+(\[\d+\])*(\.[A-Za-z0-9_-]+(\[\d+\])*)*$/.test(text)) return undefined;
  const out: PathSegment[] = [];
  for (const part of text.split('.')) {
    const name = /^[A-Za-z0-9_-]+/.exec(part)?.[0] as string;
    out.push({ kind: 'field', name });
    for (const m of part.slice(name.length).matchAll(/\[(\d+)\]/g)) out.push({ kind: 'index', index: Number(m[1]) });
  }
  return out;
}

// ---- checks ---------------------------------------------------------------------------------------------

interface Problem {
  readonly path: (string | number)[];
  readonly message: string;
}

const fromList = (from: string | readonly string[]): readonly string[] => (typeof from === 'string' ? [from] : from);

/** The states a machine declares: its initial state and every state its transitions name. */
export function declaredStates(m: Pick<MachineEntry, 'initial' | 'transitions'>): ReadonlySet<string> {
  const states = new Set([m.initial]);
  for (const t of m.transitions) {
    for (const s of fromList(t.from)) states.add(s);
    states.add(t.to);
  }
  return states;
}

function problemsOf(config: { machines: readonly MachineEntry[]; continuation?: { message: string } | undefined }): Problem[] {
  const out: Problem[] = [];
  const seen = new Set<string>();
  config.machines.forEach((m, i) => {
    const at = (field: (string | number)[], message: string) => out.push({ path: ['machines', i, ...field], message: `machine '${m.name}': ${message}` });
    if (seen.has(m.name)) at(['name'], 'the name is used by another machine');
    seen.add(m.name);
    const key = parseTemplate(m.key);
    if (!key.ok) at(['key'], key.error);
    const states = declaredStates(m);
    if (m.on_unmatched !== null && !states.has(m.on_unmatched))
      at(['on_unmatched'], `'${m.on_unmatched}' is not a state of the machine (${[...states].join(', ')})`);
    m.terminal.forEach((s, j) => {
      if (!states.has(s)) at(['terminal', j], `'${s}' is not a state of the machine (${[...states].join(', ')})`);
    });
    m.transitions.forEach((t, j) => {
      const tat = (field: (string | number)[], message: string) =>
        out.push({ path: ['machines', i, 'transitions', j, ...field], message: `machine '${m.name}', transition ${j} (${field[0]}): ${message}` });
      const parsed = parsePattern(t.on);
      if (!parsed.ok) tat(['on'], `${JSON.stringify(t.on)}: ${describeParseError(parsed.error)}`);
      if (t.emit !== undefined) {
        const content = parseTemplate(t.emit.content);
        if (!content.ok) tat(['emit', 'content'], content.error);
        if (t.emit.role !== undefined && t.emit.target !== 'session' && t.emit.target !== 'conversation')
          tat(['emit', 'role'], `a role applies to the session and conversation targets only, not '${t.emit.target}'`);
      }
      if (t.on_violation?.reason !== undefined) {
        const reason = parseTemplate(t.on_violation.reason);
        if (!reason.ok) tat(['on_violation', 'reason'], reason.error);
      }
    });
  });
  if (config.continuation !== undefined) {
    const other = /\{[^{}]*\}/.exec(config.continuation.message.replaceAll('{summary}', ''));
    if (other !== null) out.push({ path: ['continuation', 'message'], message: `continuation: only {summary} is filled in, not ${other[0]}` });
  }
  return out;
}

/** The config from YAML or JSON text; errors name the machine, the transition and the field. */
export function parseStateMachineConfig(text: string, format: 'yaml' | 'json' = 'yaml'): Result<StateMachineConfig, string> {
  let data: unknown;
  try {
    data = format === 'json' ? JSON.parse(text) : parseYaml(text);
  } catch (e) {
    return err(`not ${format}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const parsed = StateMachineConfigSchema.safeParse(data ?? {});
  if (parsed.success) return ok(parsed.data);
  return err(issueLine(parsed.error));
}

/** Merges a base config with a per-agent section: machines of both (a name in both is an error), the section's continuation first. */
export function mergeConfigs(base: StateMachineConfig, section: StateMachineConfig): Result<StateMachineConfig, string> {
  const names = new Set(base.machines.map((m) => m.name));
  const clash = section.machines.find((m) => names.has(m.name));
  if (clash !== undefined) return err(`machine '${clash.name}' is declared by the plugin and by the state_machine section`);
  const continuation = section.continuation ?? base.continuation;
  return ok({ machines: [...base.machines, ...section.machines], ...(continuation !== undefined ? { continuation } : {}) });
}

/** The printed form of each transition's pattern (for logs and docs). */
export const printedPattern = (text: string): string => {
  const p = parsePattern(text);
  return p.ok ? formatPattern(p.value) : text;
};

export type { JsonValue };
