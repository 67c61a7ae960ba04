export { createHttpApp, type HttpOptions } from './http.ts';
export { bodyOf, HttpError, logStream, registryError, sseOf, SSE_HEADERS, type ServerParts } from './http-support.ts';
export { RunRegistry, ThreadLog, type ConcurrencyPolicy, type LogFrame, type LogItem, type RegistryOptions, type ResyncFrame, type StartRequest, type StartedRun } from './run-registry.ts';
export { Mailbox, type SubmitRequest } from './mailbox.ts';
export { listen, type RunningServer } from './node.ts';
export { recoverRuns } from './recovery.ts';
export { savedConfig, providerOf, ModelConfigSchema, ProviderConfigSchema, McpServerConfigSchema, type ConfigDocs, type ProviderConfig } from './config-routes.ts';
export { mcpServer, type AgentHost } from './mcp-host.ts';
export { acpAgent } from './acp-host.ts';
