export { createHttpApp, type HttpOptions } from './http.ts';
export { bodyOf, HttpError, logStream, MAX_JSON_DEPTH, readJson, registryError, sseOf, SSE_HEADERS, type ServerParts } from './http-support.ts';
export {
  RunRegistry,
  ThreadLog,
  type ConcurrencyPolicy,
  type LogFrame,
  type LogItem,
  type RegistryOptions,
  type ResyncFrame,
  type RunObserver,
  type RunStarter,
  type RunWatcher,
  type StartRequest,
  type StartedRun,
} from './run-registry.ts';
export { Mailbox, type SubmitRequest } from './mailbox.ts';
export { DEFAULT_CONNECTION_LIMITS, listen, type ConnectionLimits, type ListenOptions, type RunningServer } from './node.ts';
export { recoverRuns } from './recovery.ts';
export {
  savedConfig,
  providerOf,
  ModelConfigSchema,
  ProviderConfigSchema,
  McpServerConfigSchema,
  type ConfigDocs,
  type ConfigGuardOptions,
  type ProviderConfig,
} from './config-routes.ts';
export { mcpServer, type AgentHost, type McpAgentServer } from './mcp-host.ts';
export { acpAgent } from './acp-host.ts';
export {
  createLogger,
  errorFields,
  escapeControls,
  SecretValues,
  secretsOf,
  silentLogger,
  LOG_FORMATS,
  LOG_LEVELS,
  type Logger,
  type LogFields,
  type LogFormat,
  type LogLevel,
  type LoggerOptions,
} from './log.ts';
export { createAwaken, AwakenOptionsError, type Awaken, type AwakenOptions } from './embed.ts';
export { opsMiddleware, opsRoutes, type OpsOptions } from './ops-routes.ts';
export { ServerMetrics, METRICS_CONTENT_TYPE, ERROR_CLASSES, type ErrorClass } from './prometheus.ts';
