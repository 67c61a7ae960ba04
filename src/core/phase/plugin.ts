import type { StateError } from '../../contract/errors.ts';
import { PHASES, type Phase } from '../../contract/phase.ts';
import { err, ok, type Result } from '../../contract/result.ts';
import type { AgentSpec } from '../../contract/agent-spec.ts';
import type { InferenceExecutionError } from '../../contract/errors.ts';
import type { Message, ToolCall } from '../../contract/message.ts';
import type { StreamResult } from '../../contract/stream.ts';
import type { ToolDescriptor, ToolResult } from '../../contract/tool.ts';
import type { InferenceObservation } from '../policies/stop-policy.ts';
import type { Snapshot } from '../state/snapshot.ts';
import type { EffectSpec, ScheduledActionSpec, StateCommand } from '../state/state-command.ts';
import type { AnyStateKey, StateKeyOptions } from '../state/state-key.ts';
import type { KeyRegistration } from '../state/state-ops.ts';

/** What every phase input carries: the run it belongs to. */
export interface RunFields {
  readonly agentSpec: AgentSpec;
  readonly threadId: string;
  readonly runId: string;
}

/**
 * The input the loop gives each phase's hooks (core-spec §3): the plugin API. Every input is a new
 * object for that phase run, read-only; `messages` is the thread's history as the phase sees it.
 */
export interface PhaseInputs {
  readonly run_start: RunFields & { readonly now: number; readonly tools: readonly ToolDescriptor[] };
  readonly step_start: RunFields & { readonly messages: readonly Message[] };
  /** `tools`: every tool of the agent (before this step's filters), so a hook can choose among them. */
  readonly before_inference: RunFields & { readonly messages: readonly Message[]; readonly tools: readonly ToolDescriptor[] };
  readonly after_inference: RunFields & {
    /** What the stop policies observe; `ok: false` when the inference failed. */
    readonly inference: InferenceObservation;
    readonly now: number;
    /** The streamed result, or the error the inference failed with. */
    readonly llmResponse: StreamResult | { readonly error: InferenceExecutionError };
    readonly messages: readonly Message[];
  };
  readonly before_tool_execute: RunFields & { readonly toolCall: ToolCall; readonly messages: readonly Message[] };
  readonly after_tool_execute: RunFields & { readonly toolCall: ToolCall; readonly toolResult: ToolResult | undefined; readonly messages: readonly Message[] };
  readonly step_end: RunFields & { readonly messages: readonly Message[] };
  readonly run_end: RunFields & { readonly messages: readonly Message[] };
}

/** A phase's input without the run fields (what a caller of the loop's `runPhase` supplies). */
export type PhaseFields<P extends Phase> = Omit<PhaseInputs[P], keyof RunFields>;

/**
 * What a hook sees: the phase, ONE frozen snapshot, and the phase's input. A hook registered for one
 * phase gets that phase's input typed; a hook for any phase (`PhaseContext`) gets the union.
 */
export interface PhaseContext<P extends Phase = Phase> {
  readonly phase: P;
  readonly snapshot: Snapshot;
  readonly input: PhaseInputs[P];
}

/**
 * What a hook or an action handler returns: the command to commit, or nothing when it changes
 * nothing (the same as `StateCommand.empty()`), at once or as a promise.
 */
export type HookResult = void | StateCommand | Promise<void | StateCommand>;
export type PhaseHook<P extends Phase = Phase> = (ctx: PhaseContext<P>) => HookResult;
export type ActionHandler<P> = (ctx: PhaseContext, payload: P) => HookResult;
/** Effect handlers see the post-commit snapshot and return nothing: they cannot change state. */
export type EffectHandler<P> = (payload: P, snapshot: Snapshot) => void | Promise<void>;
export type RequestTransform<R> = (request: R) => R;

/** Anything with a descriptor can be registered as a tool; execution is the runtime's concern. */
export interface ToolLike {
  readonly descriptor: ToolDescriptor;
}

export interface Plugin {
  readonly name: string;
  register(registrar: PluginRegistrar): void;
}

export interface HookRegistration {
  readonly pluginId: string;
  readonly phase: Phase;
  readonly hook: PhaseHook;
}

interface ActionRegistration {
  readonly pluginId: string;
  readonly spec: ScheduledActionSpec<unknown>;
  readonly handler: ActionHandler<unknown>;
}

interface EffectRegistration {
  readonly pluginId: string;
  readonly spec: EffectSpec<unknown>;
  readonly handler: EffectHandler<unknown>;
}

/**
 * Collects a plugin's components (book: 插件系统内部机制). Duplicates are recorded, not thrown:
 * `buildExecutionEnv` reports the first one. A list is made at its first entry (a plugin registers
 * two or three kinds of the seven; registration runs once per run).
 */
export class PluginRegistrar {
  readonly pluginId: string;
  #keys: KeyRegistration[] | undefined;
  #hooks: HookRegistration[] | undefined;
  #actions: ActionRegistration[] | undefined;
  #effects: EffectRegistration[] | undefined;
  #tools: ToolLike[] | undefined;
  #transforms: RequestTransform<unknown>[] | undefined;
  #errors: StateError[] | undefined;

  constructor(pluginId: string) {
    this.pluginId = pluginId;
  }

  get keys(): readonly KeyRegistration[] {
    return this.#keys ?? NONE;
  }

  get hooks(): readonly HookRegistration[] {
    return this.#hooks ?? NONE;
  }

  get actions(): readonly ActionRegistration[] {
    return this.#actions ?? NONE;
  }

  get effects(): readonly EffectRegistration[] {
    return this.#effects ?? NONE;
  }

  get tools(): readonly ToolLike[] {
    return this.#tools ?? NONE;
  }

  get transforms(): readonly RequestTransform<unknown>[] {
    return this.#transforms ?? NONE;
  }

  get errors(): readonly StateError[] {
    return this.#errors ?? NONE;
  }

  registerKey(key: AnyStateKey, options?: Partial<StateKeyOptions>): this {
    if (this.keys.some((k) => k.key.key === key.key)) (this.#errors ??= []).push({ code: 'key_already_registered', key: key.key });
    else (this.#keys ??= []).push(options === undefined ? { key } : { key, options });
    return this;
  }

  /** A hook for one phase: it gets that phase's input, typed (`PhaseInputs`). */
  registerPhaseHook<P extends Phase>(phase: P, hook: PhaseHook<P>): this {
    // Stored for any phase; the engine calls it only with contexts of `phase`.
    (this.#hooks ??= []).push({ pluginId: this.pluginId, phase, hook: hook as unknown as PhaseHook });
    return this;
  }

  registerScheduledAction<P, I>(spec: ScheduledActionSpec<P, I>, handler: ActionHandler<P>): this {
    if (this.actions.some((a) => a.spec.key === spec.key)) (this.#errors ??= []).push({ code: 'handler_already_registered', key: spec.key });
    else
      (this.#actions ??= []).push({
        pluginId: this.pluginId,
        spec: spec as unknown as ScheduledActionSpec<unknown>,
        handler: handler as ActionHandler<unknown>,
      });
    return this;
  }

  registerEffect<P>(spec: EffectSpec<P>, handler: EffectHandler<P>): this {
    if (this.effects.some((e) => e.spec.key === spec.key)) (this.#errors ??= []).push({ code: 'effect_handler_already_registered', key: spec.key });
    else (this.#effects ??= []).push({ pluginId: this.pluginId, spec: spec as EffectSpec<unknown>, handler: handler as EffectHandler<unknown> });
    return this;
  }

  registerTool(tool: ToolLike): this {
    if (this.tools.some((t) => t.descriptor.id === tool.descriptor.id))
      (this.#errors ??= []).push({ code: 'tool_already_registered', toolId: tool.descriptor.id });
    else (this.#tools ??= []).push(tool);
    return this;
  }

  registerRequestTransform<R>(transform: RequestTransform<R>): this {
    (this.#transforms ??= []).push(transform as RequestTransform<unknown>);
    return this;
  }
}

/** What a plugin registered: the registrar's lists, read-only. */
export type PluginRegistration = Pick<PluginRegistrar, 'pluginId' | 'keys' | 'hooks' | 'actions' | 'effects' | 'tools' | 'transforms' | 'errors'>;

/** A plugin registered once, when it was made (`preRegistered`): every env built from it reads that registration. */
export interface PreRegisteredPlugin extends Plugin {
  readonly registration: PluginRegistration;
}

/**
 * Registers `plugin` now, once, for every env built from the plugin returned — for a plugin whose
 * registration is the same every time (its hooks and handlers keep nothing between runs), e.g. the
 * runtime's own. Any other plugin is registered afresh by each `buildExecutionEnv`.
 */
export function preRegistered(plugin: Plugin): PreRegisteredPlugin {
  const registration = new PluginRegistrar(plugin.name);
  plugin.register(registration);
  return Object.freeze({ name: plugin.name, register: (r: PluginRegistrar) => plugin.register(r), registration });
}

/** Whether the plugin was registered once, when it was made (`preRegistered`). */
export const isPreRegistered = (plugin: Plugin): plugin is PreRegisteredPlugin => (plugin as Partial<PreRegisteredPlugin>).registration !== undefined;

/** A plugin's registration; a `register` that throws is an error of the build, not a crash of the caller. */
function registrationOf(plugin: Plugin): PluginRegistration | StateError {
  if (isPreRegistered(plugin)) return plugin.registration;
  const r = new PluginRegistrar(plugin.name);
  try {
    plugin.register(r);
  } catch (e) {
    return { code: 'plugin_register_failed', name: plugin.name, message: e instanceof Error ? e.message : String(e) };
  }
  return r;
}

/** The list of a kind a plugin registered none of (shared, never written). */
const NONE: readonly never[] = Object.freeze([]);

/**
 * Everything the phase engine dispatches to. Structural components (keys, action handlers, effect
 * handlers) are always collected; behavioural ones (hooks, tools, request transforms) only from
 * active plugins.
 */
export interface ExecutionEnv {
  readonly plugins: readonly { readonly name: string; readonly keys: readonly KeyRegistration[] }[];
  readonly hooks: ReadonlyMap<Phase, readonly HookRegistration[]>;
  readonly actionHandlers: ReadonlyMap<string, ActionRegistration>;
  readonly effectHandlers: ReadonlyMap<string, EffectRegistration>;
  readonly tools: ReadonlyMap<string, ToolLike>;
  readonly transforms: readonly RequestTransform<unknown>[];
}

export interface EnvOptions {
  /** Plugin names whose behavioural components are active; empty or absent = all. */
  readonly activePlugins?: readonly string[];
}

/** Walks `plugins` in list order; the first duplicate (plugin, key, handler, effect handler, tool) fails the build. */
const NO_HOOKS: readonly HookRegistration[] = [];

export function buildExecutionEnv(plugins: readonly Plugin[], options: EnvOptions = {}): Result<ExecutionEnv, StateError> {
  const active = options.activePlugins ?? [];
  const isActive = (name: string): boolean => active.length === 0 || active.includes(name);
  // Phases no active plugin hooks share one empty list (most runs hook two or three of the eight).
  const hooks = new Map<Phase, HookRegistration[]>();
  for (const p of PHASES) hooks.set(p, NO_HOOKS as HookRegistration[]);
  const actionHandlers = new Map<string, ActionRegistration>();
  const effectHandlers = new Map<string, EffectRegistration>();
  const tools = new Map<string, ToolLike>();
  const transforms: RequestTransform<unknown>[] = [];
  const registered: { name: string; keys: readonly KeyRegistration[] }[] = [];
  const keyNames = new Set<string>();

  for (const plugin of plugins) {
    if (registered.some((p) => p.name === plugin.name)) return err({ code: 'plugin_already_installed', name: plugin.name });
    const r = registrationOf(plugin);
    if ('code' in r) return err(r);
    const first = r.errors[0];
    if (first !== undefined) return err(first);
    for (const { key } of r.keys) {
      if (keyNames.has(key.key)) return err({ code: 'key_already_registered', key: key.key });
      keyNames.add(key.key);
    }
    for (const a of r.actions) {
      if (actionHandlers.has(a.spec.key)) return err({ code: 'handler_already_registered', key: a.spec.key });
      actionHandlers.set(a.spec.key, a);
    }
    for (const e of r.effects) {
      if (effectHandlers.has(e.spec.key)) return err({ code: 'effect_handler_already_registered', key: e.spec.key });
      effectHandlers.set(e.spec.key, e);
    }
    registered.push({ name: plugin.name, keys: r.keys });
    if (!isActive(plugin.name)) continue;
    for (const tool of r.tools) {
      if (tools.has(tool.descriptor.id)) return err({ code: 'tool_already_registered', toolId: tool.descriptor.id });
      tools.set(tool.descriptor.id, tool);
    }
    for (const h of r.hooks) {
      // A hook for a name that is not a phase is never called (as before: no list holds it).
      const list = hooks.get(h.phase) ?? [];
      if (list === NO_HOOKS) hooks.set(h.phase, [h]);
      else list.push(h);
    }
    transforms.push(...r.transforms);
  }
  return ok({ plugins: registered, hooks, actionHandlers, effectHandlers, tools, transforms });
}
