/**
 * The official judges of the five protocols (`awaken-ts/judges`): each runs the protocol's own
 * library over a captured body. Their libraries are optional peer dependencies of the package —
 * `ai`, `@ag-ui/client` + `@ag-ui/core` + `rxjs`, `@a2a-js/sdk`, `@modelcontextprotocol/sdk`,
 * `@agentclientprotocol/sdk` + `ajv` — so import this entry only where they are installed.
 */
export { judgeAiSdk, type Verdict as AiSdkVerdict } from './ai-sdk-v6/judge.ts';
export { judgeAgUi, type AgUiVerdict } from './ag-ui/judge.ts';
export { judgeA2a } from './a2a/judge.ts';
export { judgeMcp } from './mcp/judge.ts';
export { judgeAcp, type AcpVerdict } from './acp/judge.ts';
export { judgeAiSdkTurns } from './ai-sdk-v6/judge.ts';
export { judgeAgUiTurns } from './ag-ui/judge.ts';
export { judgeA2aTurns } from './a2a/judge.ts';
export { judgeMcpTurns } from './mcp/judge.ts';
export { judgeAcpTurns } from './acp/judge.ts';
export { driveAiSdk } from './ai-sdk-v6/drive.ts';
export { driveAgUi } from './ag-ui/drive.ts';
export { driveA2a } from './a2a/drive.ts';
export { driveMcp, type McpScenario } from './mcp/drive.ts';
export { driveAcp, type AcpScenario } from './acp/drive.ts';
export { CHECKS, CHECK_TITLES, reportOf, renderReport, type Capture, type CheckName, type Finding, type JudgeReport, type Scenario } from './findings.ts';
