// The package's root entry: what a user writes agents, tools, plugins and servers with, each name
// listed (docs/api.md gives one line per name; spec/package/exports.spec.ts holds the two together).
// The machinery behind it — the loop, the tool batch, the phase engine, snapshot internals, the
// pure core's helpers — is under `awaken-ts/unstable`, without a semver promise (docs/adr/0045-curated-root.md).

// Building and running agents
export {
  AgentRuntime,
  AgentRuntimeBuilder,
  type DelegationOptions,
  type RunHandle,
  type RunOptions,
  type RunRequest,
  type SuspendedCall,
} from './runtime/agent-runtime.ts';
export type { AgentRunResult, Decision } from './runtime/run-loop.ts';
export type { ModelEntry, RuntimePlugin, ToolExecutionMode } from './runtime/resolve.ts';
export { parseAgentSpec } from './runtime/agent-spec-file.ts';

// App modules
export {
  defineApp,
  pluginFactory,
  PluginConfigError,
  type AiSdkToolLike,
  type AppDefinition,
  type LanguageModelLike,
  type PluginFactory,
  type PluginOrigin,
} from './app/define.ts';
export { scriptedProvider } from './app/scripted-provider.ts';

// Agent specs and plugin configuration
export {
  AgentSpecSchema,
  definePluginConfigKey,
  newAgentSpec,
  readPluginConfig,
  withPluginConfig,
  type AgentSpec,
  type AgentSpecInput,
  type ContextWindowPolicy,
  type PluginConfigKey,
  type RemoteAuth,
  type RemoteEndpoint,
  type RunRecovery,
} from './contract/agent-spec.ts';
export type { InferenceOverride } from './contract/inference.ts';

// Tools
export {
  defineTool,
  ToolFailure,
  UnavailableBeforeDispatch,
  type ProgressStatus,
  type ResumeContext,
  type Tool,
  type ToolCallContext,
  type ToolOutput,
} from './runtime/tool.ts';
export { openSandbox, SandboxRefused, type Sandbox } from './runtime/sandbox/tool.ts';
export { clientTool } from './runtime/client-tool.ts';
export { clientStateKey } from './runtime/client-state.ts';
export {
  ToolResults,
  type ResumeDecisionAction,
  type SuspendTicket,
  type Suspension,
  type ToolCallResume,
  type ToolDescriptor,
  type ToolResult,
  type ToolStatus,
} from './contract/tool.ts';
export type { ToolRecoveryCapability, ToolRecoveryMode, ToolRecoveryPolicy } from './contract/tool-recovery.ts';

// Messages, events and streams
export {
  Messages,
  type ContentBlock,
  type MediaSource,
  type Message,
  type MessageMetadata,
  type Role,
  type ToolCall,
  type Visibility,
} from './contract/message.ts';
export {
  extractResponse,
  parseAgentEvent,
  serialiseEvent,
  type AgentEvent,
  type AgentEventOf,
  type AgentEventType,
} from './contract/event.ts';
export type { StreamPart } from './contract/stream.ts';
export type { TokenUsage } from './contract/usage.ts';
export type { RunStatus, TerminationReason } from './contract/lifecycle.ts';
export type { JsonObject, JsonValue } from './contract/json.ts';
export { err, ok, type Result } from './contract/result.ts';
export type { Phase } from './contract/phase.ts';
export { RUN_RESUMED, RunResumedSchema, type RunResumed } from './contract/resumed.ts';

// Event sinks
export { callbackSink, VecEventSink, type EventSink } from './runtime/event-sink.ts';

// State
export {
  defineStateKey,
  type KeyScope,
  type MergeStrategy,
  type StateKey,
  type StateKeyOptions,
} from './core/state/state-key.ts';
export {
  defineAction,
  defineEffect,
  StateCommand,
  type ScheduledAction,
  type TypedEffect,
} from './core/state/state-command.ts';
export { Snapshot } from './core/state/snapshot.ts';

// Plugins, hooks and phases
export {
  PluginRegistrar,
  type ActionHandler,
  type EffectHandler,
  type Plugin,
  type PhaseContext,
  type PhaseHook,
  type PhaseInputs,
  type HookResult,
  type RequestTransform,
} from './core/phase/plugin.ts';
export {
  ask,
  block,
  definePlugin,
  PluginDefinitionError,
  refuse,
  type DefinedPluginContext,
  type PluginDefinition,
  type ToolVerdict,
} from './plugins/define-plugin.ts';
export { StateFailure, type PhaseError } from './core/phase/phase-error.ts';

// The loop's actions a plugin schedules
export {
  AddContextMessage,
  ContinueRun,
  ExcludeTool,
  IncludeOnlyTools,
  SetInferenceOverride,
  ToolInterceptAction,
} from './runtime/builtin-plugins.ts';
export { INTERCEPT_PRECEDENCE, type ContextMessageInput, type ToolIntercept } from './runtime/loop-keys.ts';

// The environment
export {
  deterministicEnv,
  realEnv,
  type Clock,
  type DeterministicEnv,
  type Env,
  type IdGenerator,
} from './runtime/env.ts';

// Models and providers
export { InferenceFailure, type InferenceRequest, type LlmExecutor } from './runtime/llm.ts';
export { RetryConfigKey, type LlmRetryPolicy } from './runtime/retry.ts';

// Stop policies
export {
  consecutiveErrorsPolicy,
  contentMatchPolicy,
  loopDetectionPolicy,
  maxRoundsPolicy,
  stopOnToolPolicy,
  timeoutPolicy,
  tokenBudgetPolicy,
  type InferenceObservation,
  type StopDecision,
  type StopPolicy,
  type StopPolicyStats,
} from './core/policies/stop-policy.ts';

// The context window
export { CompactionConfigKey, ContextTransformConfigKey, type Summarizer } from './runtime/context.ts';
export type { CompactionConfig, ContextTransformConfig, ModelLimits } from './core/context/policy.ts';
export type { Tokenizer } from './core/context/tokens.ts';

// Delegation to other agents
export {
  DelegationConfigKey,
  type DelegateBackend,
  type DelegateOutcome,
  type DelegateRequest,
  type DelegationConfig,
  type RemoteBackendFactory,
} from './runtime/delegation.ts';
export { a2aBackend, type A2aBackendOptions } from './runtime/a2a-backend.ts';
export { OutboundGuard, OutboundRefusal, type OutboundOptions } from './runtime/outbound.ts';

// Built-in plugins: deferred tools
export { DeferredToolsConfigKey, deferredToolsPlugin, type DeferredToolsOptions } from './plugins/deferred-tools.ts';
export type { DeferredToolsConfig, DeferredToolsConfigInput } from './core/deferral/config.ts';

// Built-in plugins: permission
export {
  PermissionActionSchema,
  PermissionConfigKey,
  PermissionPolicy,
  permissionPlugin,
  permissionTicket,
  type PermissionAction,
  type PermissionConfig,
  type PermissionConfigInput,
  type PermissionRule,
} from './plugins/permission.ts';

// Built-in plugins: reminders
export { ReminderConfigKey, reminderPlugin, type ReminderConfig, type ReminderRule } from './plugins/reminder.ts';

// Built-in plugins: state machines
export { stateMachinePlugin, stateMachineTicket } from './plugins/state-machine/plugin.ts';
export type { StateMachineConfig, StateMachineConfigInput } from './plugins/state-machine/config.ts';

// Built-in plugins: skills
export { skillsSubsystem, type SkillResourceLimits } from './plugins/skills/plugin.ts';
export {
  discoverSkills,
  embeddedSkill,
  skillRegistry,
  type Discovery,
  type Skill,
} from './plugins/skills/skill.ts';

// Built-in plugins: MCP tools
export {
  connectMcp,
  connectMcpServer,
  McpToolRegistryManager,
  type McpConnectOptions,
  type McpServerConfig,
  type McpToolSource,
} from './plugins/mcp-tools.ts';

// Built-in plugins: handoff
export {
  clearHandoff,
  handoffPlugin,
  HandoffState,
  requestHandoff,
  type HandoffPlugin,
  type HandoffPluginOptions,
} from './plugins/handoff.ts';

// Built-in plugins: generative UI
export { a2uiPlugin, type A2uiPromptConfig } from './plugins/generative-ui.ts';

// Built-in plugins: observability
export { observabilityPlugin, type ObservabilityOptions } from './plugins/observability/plugin.ts';
export {
  InMemorySink,
  type AgentMetrics,
  type GenAIContent,
  type GenAIMessage,
  type GenAIPart,
  type GenAISpan,
  type MetricsSink,
  type ToolSpan,
} from './plugins/observability/spans.ts';
export type { RunTap, TapRun, TappedInference } from './runtime/tap.ts';

// Stores
export {
  MemoryThreadRunStore,
  type RunCheckpoint,
  type ThreadRunStore,
  type ThreadSnapshot,
} from './runtime/thread-run-store.ts';
export {
  StoreFailure,
  type Page,
  type RunRecord,
  type RunStore,
  type Store,
  type StoreError,
  type ThreadRecord,
  type ThreadStore,
} from './runtime/store.ts';
export { MemoryProfileStore, type ProfileStore } from './runtime/profile-store.ts';

// Errors
export {
  describeBuildError,
  describeStateError,
  RuntimeBuildError,
  type BuildError,
  type InferenceExecutionError,
  type ResolveError,
  type RuntimeError,
  type StateError,
  type StateErrorCode,
  type StorageError,
  type ToolError,
} from './contract/errors.ts';
export { describeInferenceError, describeToolError } from './runtime/errors.ts';
export { describeResolveError } from './runtime/resolve.ts';
