import { extname } from 'node:path';
import { z } from 'zod';
import { type JsonValue, JsonValueSchema } from '../../contract/json.ts';
import { ToolResults } from '../../contract/tool.ts';
import { StateCommand } from '../../core/state/state-command.ts';
import { defineStateKey } from '../../core/state/state-key.ts';
import { AddContextMessage } from '../../runtime/builtin-plugins.ts';
import type { RuntimePlugin } from '../../runtime/resolve.ts';
import type { SandboxLimits } from '../../runtime/sandbox/run.ts';
import type { Sandbox } from '../../runtime/sandbox/tool.ts';
import { defineTool, type Tool } from '../../runtime/tool.ts';
import { PERMISSION_PLUGIN_ID, PermissionOverrides } from '../permission.ts';
import { definePluginConfigKey, readPluginConfig, type AgentSpec } from '../../contract/agent-spec.ts';
import { perAgentSpec } from '../per-spec.ts';
import { embeddedSkill, type Skill } from './skill.ts';

export const SKILLS_DISCOVERY_PLUGIN_ID = 'skills-discovery';
export const SKILLS_ACTIVE_INSTRUCTIONS_PLUGIN_ID = 'skills-active-instructions';
export const SKILL_LIST_TOOL_ID = 'list_skills';
export const SKILL_ACTIVATE_TOOL_ID = 'skill';
export const SKILL_LOAD_RESOURCE_TOOL_ID = 'load_skill_resource';
export const SKILL_SCRIPT_TOOL_ID = 'skill_script';

/** How a skill's scripts run, when they may: in this sandbox, under these limits (the sandbox's own where not given). */
export interface SkillScripts {
  readonly sandbox: Sandbox;
  readonly limits?: Partial<SandboxLimits>;
}

/** The interpreter of a script by its extension: a skill's scripts are Python or shell. */
const INTERPRETERS: Readonly<Record<string, string>> = { '.py': 'python3', '.sh': 'bash' };

export interface ActiveSkill {
  readonly instructions: string;
  readonly allowed_tools: readonly string[];
}
/** `skills`: the skills activated in this run, by name (run-scoped: a new run starts with none). */
export const SkillsState = defineStateKey<{ readonly active: Readonly<Record<string, ActiveSkill>> }, { readonly name: string; readonly skill: ActiveSkill }>({
  key: 'skills',
  init: () => ({ active: {} }),
  apply: (s, u) => ({ active: { ...s.active, [u.name]: u.skill } }),
  codec: z.object({ active: z.record(z.string(), z.object({ instructions: z.string(), allowed_tools: z.array(z.string()) }).strict()) }).strict() as z.ZodType<{
    readonly active: Readonly<Record<string, ActiveSkill>>;
  }>,
});

/**
 * What a run may read of skill resources: each read at most `maxResourceBytes` (a larger resource
 * is refused unread), at most `maxResourceReads` reads a run. Each refusal is a tool error the
 * model reads. A prompt decides what is read, so without a bound any caller could make the server
 * hold a file of any size — in the thread, the events and a transcript, several times over.
 */
export interface SkillResourceLimits {
  readonly maxResourceBytes: number;
  readonly maxResourceReads: number;
}
export const DEFAULT_SKILL_RESOURCE_LIMITS: SkillResourceLimits = Object.freeze({ maxResourceBytes: 256 * 1024, maxResourceReads: 16 });

/** The limits a `skills` section (a server's or an agent's) sets: `max_resource_bytes`, `max_resource_reads`. */
export function skillResourceLimitsOf(section: {
  readonly max_resource_bytes?: number | undefined;
  readonly max_resource_reads?: number | undefined;
}): Partial<SkillResourceLimits> {
  return {
    ...(section.max_resource_bytes !== undefined ? { maxResourceBytes: section.max_resource_bytes } : {}),
    ...(section.max_resource_reads !== undefined ? { maxResourceReads: section.max_resource_reads } : {}),
  };
}

const unknown = (tool: string, name: string, registry: ReadonlyMap<string, Skill>) =>
  ToolResults.error(tool, `no skill '${name}' (skills: ${[...registry.keys()].join(', ') || 'none'})`);

type RegistryOf = (spec: AgentSpec) => ReadonlyMap<string, Skill>;
type LimitsOf = (spec: AgentSpec) => SkillResourceLimits;

/**
 * The three tools: list the skills, activate one, read one of its resources (within `limits`); and,
 * given `scripts`, a fourth that runs one of a skill's scripts in the sandbox.
 */
export function skillTools(
  skills: ReadonlyMap<string, Skill> | RegistryOf,
  limits: Partial<SkillResourceLimits> | LimitsOf = {},
  scripts?: SkillScripts,
): readonly Tool[] {
  const registryOf: RegistryOf = typeof skills === 'function' ? skills : () => skills;
  const fixed = { ...DEFAULT_SKILL_RESOURCE_LIMITS, ...(typeof limits === 'function' ? {} : limits) };
  const limitsOf: LimitsOf = typeof limits === 'function' ? limits : () => fixed;
  // The reads of each run, by the run's own signal (one object per run, collected with it): kept
  // beside the run rather than in its state, so recorded runs replay with the state they recorded.
  const reads = new WeakMap<AbortSignal, number>();
  return [
    defineTool({
      id: SKILL_LIST_TOOL_ID,
      description: 'List the skills you can activate, with what each is for',
      args: z.object({}).strict(),
      execute: (_args, ctx) =>
        ToolResults.success(
          SKILL_LIST_TOOL_ID,
          [...registryOf(ctx.agentSpec).values()].map((s) => ({ name: s.name, description: s.description, resources: [...s.resources()] })),
        ),
    }),
    defineTool({
      id: SKILL_ACTIVATE_TOOL_ID,
      description: 'Activate a skill: its instructions apply from the next step on, and its tools are granted for this run',
      args: z.object({ skill: z.string().min(1).describe('The skill name') }).strict(),
      execute: ({ skill }, ctx) => {
        const registry = registryOf(ctx.agentSpec);
        const s = registry.get(skill);
        if (s === undefined) return unknown(SKILL_ACTIVATE_TOOL_ID, skill, registry);
        const command = StateCommand.empty().update(SkillsState, { name: s.name, skill: { instructions: s.instructions, allowed_tools: [...s.allowedTools] } });
        // The tools a skill names are granted for this run: run-scoped permission overrides.
        if (ctx.agentSpec.plugin_ids.includes(PERMISSION_PLUGIN_ID))
          for (const tool of s.allowedTools) command.update(PermissionOverrides, { type: 'allow_tool', tool_id: tool });
        return {
          result: ToolResults.success(SKILL_ACTIVATE_TOOL_ID, { skill_id: s.name, instructions: s.instructions, allowed_tools: [...s.allowedTools] }),
          command,
        };
      },
    }),
    defineTool({
      id: SKILL_LOAD_RESOURCE_TOOL_ID,
      description: "Read one of a skill's files (a path relative to the skill, e.g. references/guide.md)",
      args: z.object({ skill: z.string().min(1), path: z.string().min(1) }).strict(),
      execute: ({ skill, path }, ctx) => {
        const registry = registryOf(ctx.agentSpec);
        const s = registry.get(skill);
        if (s === undefined) return unknown(SKILL_LOAD_RESOURCE_TOOL_ID, skill, registry);
        const { maxResourceBytes, maxResourceReads } = limitsOf(ctx.agentSpec);
        const done = reads.get(ctx.signal) ?? 0;
        if (done >= maxResourceReads)
          return ToolResults.error(
            SKILL_LOAD_RESOURCE_TOOL_ID,
            `this run has read ${done} skill resources, as many as a run may read (skills.max_resource_reads)`,
          );
        const r = s.resource(path, maxResourceBytes);
        if (!r.ok) return ToolResults.error(SKILL_LOAD_RESOURCE_TOOL_ID, r.error);
        reads.set(ctx.signal, done + 1);
        return ToolResults.success(SKILL_LOAD_RESOURCE_TOOL_ID, { skill_id: s.name, path, content: r.value });
      },
    }),
    ...(scripts === undefined ? [] : [scriptTool(registryOf, scripts)]),
  ];
}

/** `skill_script`: one of a skill's scripts, run in the sandbox with `input` as JSON on its stdin. */
function scriptTool(registryOf: RegistryOf, scripts: SkillScripts): Tool {
  return defineTool({
    id: SKILL_SCRIPT_TOOL_ID,
    description:
      "Run one of a skill's scripts (a .py or .sh file under its scripts/ folder, e.g. scripts/report.py) in a sandbox, with `input` as JSON on its stdin; its stdout is the result",
    args: z.object({ skill: z.string().min(1), script: z.string().min(1), input: JsonValueSchema.optional() }).strict(),
    execute: ({ skill, script, input }, ctx) => {
      const registry = registryOf(ctx.agentSpec);
      const s = registry.get(skill);
      if (s === undefined) return unknown(SKILL_SCRIPT_TOOL_ID, skill, registry);
      if (s.script === undefined) return ToolResults.error(SKILL_SCRIPT_TOOL_ID, `skill '${s.name}' is embedded in its agent's spec: it has no scripts to run`);
      const file = s.script(script);
      if (!file.ok) return ToolResults.error(SKILL_SCRIPT_TOOL_ID, file.error);
      const interpreter = INTERPRETERS[extname(file.value)];
      if (interpreter === undefined) return ToolResults.error(SKILL_SCRIPT_TOOL_ID, `'${script}' is neither a .py nor a .sh script`);
      const program = { command: [interpreter, file.value] as [string, string], readable: s.folder !== undefined ? [s.folder] : [] };
      return scripts.sandbox.call(SKILL_SCRIPT_TOOL_ID, program, (input ?? {}) as JsonValue, ctx.signal, scripts.limits);
    },
  });
}

/** The catalog the model sees before each inference. */
export function skillCatalog(registry: ReadonlyMap<string, Skill>): string {
  const lines = [...registry.values()].map((s) => `- ${s.name}: ${s.description}`);
  return [
    '<available_skills>',
    ...lines,
    '</available_skills>',
    `Activate a skill with the \`${SKILL_ACTIVATE_TOOL_ID}\` tool when it fits the task; read its files with \`${SKILL_LOAD_RESOURCE_TOOL_ID}\`.`,
  ].join('\n');
}

/**
 * The skills subsystem over a registry (book: SkillSubsystem): `discovery` registers the three
 * tools and the `skills` key and puts the catalog in context; `activeInstructions` puts the
 * instructions of every active skill in context on each later inference.
 */
export function skillsSubsystem(
  registry: ReadonlyMap<string, Skill>,
  limits: Partial<SkillResourceLimits> = {},
  scripts?: SkillScripts,
): { readonly discovery: RuntimePlugin; readonly activeInstructions: RuntimePlugin } {
  const catalog = skillCatalog(registry);
  const fixed = { ...DEFAULT_SKILL_RESOURCE_LIMITS, ...limits };
  return subsystemOf(
    () => registry,
    () => catalog,
    () => fixed,
    [],
    scripts,
  );
}

/** An embedded skill as an agent's `skills` section holds it: the SKILL.md text and its resources. */
const EmbeddedSkillSchema = z.object({ skill_md: z.string().min(1), resources: z.record(z.string(), z.string()).default({}) }).strict();
const SkillsSectionSchema = z
  .object({
    embedded: z.array(EmbeddedSkillSchema).default([]),
    max_resource_bytes: z.number().int().min(1).optional(),
    max_resource_reads: z.number().int().min(1).optional(),
  })
  .strict()
  .superRefine((s, ctx) => {
    s.embedded.forEach((e, i) => {
      const made = embeddedSkill(e.skill_md, e.resources);
      if (!made.ok) ctx.addIssue({ code: 'custom', path: ['embedded', i, 'skill_md'], message: made.error });
    });
  });
type SkillsSection = { embedded: { skill_md: string; resources: Record<string, string> }[]; max_resource_bytes?: number; max_resource_reads?: number };
const SkillsConfigKey = definePluginConfigKey('skills', SkillsSectionSchema as unknown as z.ZodType<SkillsSection>, () => ({ embedded: [] }));

/**
 * The skills subsystem as `awaken serve` and replays have it (the plugin catalog's
 * `skills-discovery` and `skills-active-instructions`): the skills of `base` (a server's skill
 * directories; none in a replay) and those an agent embeds in its `skills` section
 * (`{embedded: [{skill_md, resources}]}`, checked at build, a bad one named by its index). An
 * embedded skill of a name `base` has wins for that agent. Resource reads are bounded by `limits`
 * (a server's), each of which the section's `max_resource_bytes` / `max_resource_reads` overrides.
 */
export function configuredSkills(
  base: ReadonlyMap<string, Skill> = new Map(),
  limits: Partial<SkillResourceLimits> = {},
  scripts?: SkillScripts,
): { readonly discovery: RuntimePlugin; readonly activeInstructions: RuntimePlugin } {
  const registryOf = perAgentSpec((spec): ReadonlyMap<string, Skill> => {
    const section = readPluginConfig(spec, SkillsConfigKey);
    const embedded = section.ok
      ? section.value.embedded.flatMap((e) => {
          const made = embeddedSkill(e.skill_md, e.resources);
          return made.ok ? [made.value] : [];
        })
      : [];
    if (embedded.length === 0) return base;
    const all = new Map(base);
    for (const skill of embedded) all.set(skill.name, skill);
    return new Map([...all].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
  const catalogOf = perAgentSpec((spec) => skillCatalog(registryOf(spec)));
  const limitsOf = perAgentSpec((spec): SkillResourceLimits => {
    const section = readPluginConfig(spec, SkillsConfigKey);
    return { ...DEFAULT_SKILL_RESOURCE_LIMITS, ...limits, ...(section.ok ? skillResourceLimitsOf(section.value) : {}) };
  });
  return subsystemOf(registryOf, catalogOf, limitsOf, [SkillsConfigKey as never], scripts);
}

function subsystemOf(
  registryOf: RegistryOf,
  catalogOf: (spec: AgentSpec) => string,
  limitsOf: LimitsOf,
  configKeys: RuntimePlugin['configKeys'],
  scripts: SkillScripts | undefined,
): { readonly discovery: RuntimePlugin; readonly activeInstructions: RuntimePlugin } {
  // One set of tools for the plugin, so a run's reads are counted across its tool calls.
  const tools = skillTools(registryOf, limitsOf, scripts);
  const discovery: RuntimePlugin = {
    name: SKILLS_DISCOVERY_PLUGIN_ID,
    ...(configKeys !== undefined && configKeys.length > 0 ? { configKeys } : {}),
    register: (r) => {
      r.registerKey(SkillsState, { scope: 'run', persistent: true });
      for (const tool of tools) r.registerTool(tool);
      r.registerPhaseHook('before_inference', (ctx) =>
        registryOf(ctx.input.agentSpec).size === 0
          ? StateCommand.empty()
          : StateCommand.empty().scheduleAction(AddContextMessage, {
              key: 'skills.catalog',
              role: 'system',
              content: catalogOf(ctx.input.agentSpec),
              target: 'system',
              priority: 0,
              cooldown_turns: 0,
              persistent: false,
            }),
      );
    },
  };
  const activeInstructions: RuntimePlugin = {
    name: SKILLS_ACTIVE_INSTRUCTIONS_PLUGIN_ID,
    register: (r) =>
      r.registerPhaseHook('before_inference', (ctx) => {
        const cmd = StateCommand.empty();
        const active = ctx.snapshot.get(SkillsState)?.active ?? {};
        for (const name of Object.keys(active).sort()) {
          const content = `<skill name="${name}">\n${(active[name] as ActiveSkill).instructions}\n</skill>`;
          cmd.scheduleAction(AddContextMessage, {
            key: `skills.active.${name}`,
            role: 'system',
            content,
            target: 'system',
            priority: 1,
            cooldown_turns: 0,
            persistent: false,
          });
        }
        return cmd;
      }),
  };
  return { discovery, activeInstructions };
}
