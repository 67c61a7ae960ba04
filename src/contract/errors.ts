import { z } from 'zod';
import { PhaseSchema } from './phase.ts';
import { unreachable } from './never.ts';

/**
 * The error families of the book's 错误 section, each a discriminated union keyed by `code`.
 * Field names are camelCase: these are local errors. Wire errors (`{"error","code"}`) are built
 * from them by the server layer.
 */

const Str = z.string();
const U64 = z.number().int().nonnegative();

export const StateErrorSchema = z.discriminatedUnion('code', [
  z.object({ code: z.literal('revision_conflict'), expected: U64, actual: U64 }),
  z.object({ code: z.literal('mutation_base_revision_mismatch'), left: U64, right: U64 }),
  z.object({ code: z.literal('plugin_already_installed'), name: Str }),
  z.object({ code: z.literal('plugin_not_installed'), name: Str }),
  z.object({ code: z.literal('key_already_registered'), key: Str }),
  z.object({ code: z.literal('unknown_key'), key: Str }),
  z.object({ code: z.literal('key_decode'), key: Str, message: Str }),
  z.object({ code: z.literal('key_encode'), key: Str, message: Str }),
  z.object({ code: z.literal('handler_already_registered'), key: Str }),
  z.object({ code: z.literal('effect_handler_already_registered'), key: Str }),
  z.object({ code: z.literal('phase_run_loop_exceeded'), phase: PhaseSchema, maxRounds: U64 }),
  z.object({ code: z.literal('unknown_scheduled_action_handler'), key: Str }),
  z.object({ code: z.literal('unknown_effect_handler'), key: Str }),
  z.object({ code: z.literal('parallel_merge_conflict'), key: Str }),
  z.object({ code: z.literal('tool_already_registered'), toolId: Str }),
  z.object({ code: z.literal('cancelled') }),
  /** A plugin's `register` threw (a user's plugin with a bug): the plugin is not installed. */
  z.object({ code: z.literal('plugin_register_failed'), name: Str, message: Str }),
]);
export type StateError = z.infer<typeof StateErrorSchema>;
export type StateErrorCode = StateError['code'];

/** Human-readable text of a `StateError` (0.6 display strings where it has them). */
export function describeStateError(e: StateError): string {
  switch (e.code) {
    case 'revision_conflict':
      return `revision conflict: expected ${e.expected}, actual ${e.actual}`;
    case 'mutation_base_revision_mismatch':
      return `mutation base revision mismatch: left ${e.left}, right ${e.right}`;
    case 'plugin_already_installed':
      return `plugin already installed: ${e.name}`;
    case 'plugin_not_installed':
      return `plugin not installed: ${e.name}`;
    case 'key_already_registered':
      return `state key already registered: ${e.key}`;
    case 'unknown_key':
      return `unknown state key: ${e.key}`;
    case 'key_decode':
      return `failed to decode state key ${e.key}: ${e.message}`;
    case 'key_encode':
      return `failed to encode state key ${e.key}: ${e.message}`;
    case 'handler_already_registered':
      return `scheduled action handler already registered: ${e.key}`;
    case 'effect_handler_already_registered':
      return `effect handler already registered: ${e.key}`;
    case 'phase_run_loop_exceeded':
      return `phase ${e.phase} did not converge after ${e.maxRounds} rounds`;
    case 'unknown_scheduled_action_handler':
      return `no handler registered for scheduled action: ${e.key}`;
    case 'unknown_effect_handler':
      return `no handler registered for effect: ${e.key}`;
    case 'parallel_merge_conflict':
      return `parallel merge conflict on exclusive key: ${e.key}`;
    case 'tool_already_registered':
      return `tool already registered: ${e.toolId}`;
    case 'plugin_register_failed':
      return `plugin '${e.name}' failed to register: ${e.message}`;
    case 'cancelled':
      return 'cancelled';
    default:
      return unreachable(e);
  }
}

/** Aborts one tool call (unlike `ToolResult.error`, which is reported back to the model). */
export const ToolErrorSchema = z.discriminatedUnion('code', [
  z.object({ code: z.literal('invalid_arguments'), message: Str }),
  z.object({ code: z.literal('execution_failed'), message: Str }),
  z.object({ code: z.literal('denied'), message: Str }),
  z.object({ code: z.literal('not_found'), message: Str }),
  z.object({ code: z.literal('internal'), message: Str }),
  /** The executor knows the call never reached the tool (nothing ran, nothing was sent): unlike the others, it is safe to retry. */
  z.object({ code: z.literal('unavailable_before_dispatch'), message: Str }),
]);
export type ToolError = z.infer<typeof ToolErrorSchema>;

export const DiscoveryErrorSchema = z.object({ source: Str, message: Str });

export const BuildErrorSchema = z.discriminatedUnion('code', [
  z.object({ code: z.literal('state'), error: StateErrorSchema }),
  z.object({ code: z.literal('agent_registry_conflict'), id: Str }),
  z.object({ code: z.literal('tool_registry_conflict'), id: Str }),
  z.object({ code: z.literal('model_registry_conflict'), id: Str }),
  z.object({ code: z.literal('provider_registry_conflict'), id: Str }),
  z.object({ code: z.literal('plugin_registry_conflict'), id: Str }),
  /** A plugin registered under an id that is not its name: one identity names it everywhere (ADR 0005). */
  z.object({ code: z.literal('plugin_id_mismatch'), id: Str, name: Str }),
  z.object({ code: z.literal('validation_failed'), message: Str }),
  z.object({ code: z.literal('discovery_failed'), error: DiscoveryErrorSchema }),
]);
export type BuildError = z.infer<typeof BuildErrorSchema>;

/** One line for a `BuildError`: its code first, then what it names (the id, the plugin, the key). */
export function describeBuildError(e: BuildError): string {
  switch (e.code) {
    case 'state':
      return `state (${e.error.code}): ${describeStateError(e.error)}`;
    case 'agent_registry_conflict':
      return `${e.code}: agent '${e.id}' is registered twice`;
    case 'tool_registry_conflict':
      return `${e.code}: tool '${e.id}' is registered twice`;
    case 'model_registry_conflict':
      return `${e.code}: model '${e.id}' is registered twice`;
    case 'provider_registry_conflict':
      return `${e.code}: provider '${e.id}' is registered twice`;
    case 'plugin_registry_conflict':
      return `${e.code}: plugin '${e.id}' is registered twice`;
    case 'plugin_id_mismatch':
      return `${e.code}: plugin '${e.name}' is registered under the id '${e.id}' (a plugin's id is its name)`;
    case 'validation_failed':
      return `${e.code}: ${e.message}`;
    case 'discovery_failed':
      return `${e.code}: ${e.error.source}: ${e.error.message}`;
    default: {
      const unknown: never = e;
      return JSON.stringify(unknown);
    }
  }
}

/**
 * What `AgentRuntimeBuilder.buildOrThrow` throws: the build error as data (`error`, the value
 * `build()` would have returned) and as one line naming its code and what it names.
 */
export class RuntimeBuildError extends Error {
  override readonly name = 'RuntimeBuildError';
  readonly error: BuildError;

  constructor(error: BuildError) {
    super(describeBuildError(error));
    this.error = error;
  }
}

export const RuntimeErrorSchema = z.discriminatedUnion('code', [
  z.object({ code: z.literal('state'), error: StateErrorSchema }),
  z.object({ code: z.literal('thread_already_running'), threadId: Str }),
  z.object({ code: z.literal('agent_not_found'), agentId: Str }),
  z.object({ code: z.literal('resolve_failed'), message: Str }),
]);
export type RuntimeError = z.infer<typeof RuntimeErrorSchema>;

export const InferenceExecutionErrorSchema = z.discriminatedUnion('code', [
  z.object({ code: z.literal('provider'), message: Str }),
  z.object({ code: z.literal('rate_limited'), message: Str }),
  z.object({ code: z.literal('timeout'), message: Str }),
  z.object({ code: z.literal('cancelled') }),
]);
export type InferenceExecutionError = z.infer<typeof InferenceExecutionErrorSchema>;

export const StorageErrorSchema = z.discriminatedUnion('code', [
  z.object({ code: z.literal('not_found'), message: Str }),
  z.object({ code: z.literal('already_exists'), message: Str }),
  z.object({ code: z.literal('version_conflict'), expected: U64, actual: U64 }),
  z.object({ code: z.literal('io'), message: Str }),
  z.object({ code: z.literal('serialization'), message: Str }),
]);
export type StorageError = z.infer<typeof StorageErrorSchema>;

export const ResolveErrorSchema = z.discriminatedUnion('code', [
  z.object({ code: z.literal('agent_not_found'), agentId: Str }),
  z.object({ code: z.literal('model_not_found'), modelId: Str }),
  z.object({ code: z.literal('provider_not_found'), providerId: Str }),
  z.object({ code: z.literal('plugin_not_found'), pluginId: Str }),
  z.object({ code: z.literal('invalid_plugin_config'), plugin: Str, key: Str, message: Str }),
  z.object({ code: z.literal('remote_agent_not_directly_runnable'), agentId: Str }),
  z.object({ code: z.literal('delegate_not_found'), agentId: Str, delegateId: Str }),
  z.object({ code: z.literal('unsupported_remote_backend'), agentId: Str, backend: Str }),
  z.object({ code: z.literal('tool_id_conflict'), toolId: Str, sourceA: Str, sourceB: Str }),
  z.object({ code: z.literal('env_build'), error: StateErrorSchema }),
]);
export type ResolveError = z.infer<typeof ResolveErrorSchema>;

/** Policy for a persisted state key that no plugin registered. */
export const UnknownKeyPolicySchema = z.enum(['error', 'skip']);
export type UnknownKeyPolicy = z.infer<typeof UnknownKeyPolicySchema>;
