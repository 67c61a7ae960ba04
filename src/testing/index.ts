export * as arbitraries from './arbitraries.ts';
export { MockLlmExecutor, ScriptedLlm, parseScript, type ScriptStep } from '../providers/scripted.ts';
export { deterministicEnv, type DeterministicEnv } from '../runtime/env.ts';
export { VecEventSink } from '../runtime/event-sink.ts';
export { checkRunInvariants } from './invariants.ts';
export { testToolContext } from './tool-context.ts';
export { checkStateKeyLaws, describeKeyLaws, type KeyLaw, type KeyLawOptions, type KeyLawReport, type LawFailure } from './state-laws.ts';
export {
  commandData,
  describePluginFuzz,
  fuzzPlugin,
  phaseInput,
  type FuzzPluginOptions,
  type PluginCheck,
  type PluginFailure,
  type PluginFuzzReport,
} from './fuzz-plugin.ts';
export {
  allocatedBytes,
  allocatedPerCall,
  benchAgent,
  PartStream,
  renderAgentBench,
  scenario as benchScenario,
  type AgentBenchOptions,
  type AgentBenchReport,
  type AgentBenchRow,
  type HookCost,
} from './bench-agent.ts';
export { recordRun, type Recording, type RecordingSetup } from '../replay/recorder.ts';
export {
  forkTranscript,
  transcriptDigest,
  type ForkEdit,
  type ForkError,
  type ForkErrorCode,
  type ForkOptions,
  type ForkPoint,
  type ForkResult,
} from '../replay/fork.ts';
export { missingCode, replayTranscript, type DivergenceKind, type PortDivergence, type ReplayOptions, type ReplayReport } from '../replay/replayer.ts';
export {
  classifyDivergence,
  DIVERGENCE_CLASSES,
  ExpectationsError,
  expectationsJsonSchema,
  readExpectations,
  renderGate,
  replayBaseline,
  ReplayExpectationsSchema,
  type BaselineOptions,
  type BaselineRun,
  type DivergenceClass,
  type GateClass,
  type GateReport,
  type GateRun,
  type ReplayExpectations,
  type UnmetExpectation,
} from '../replay/gate.ts';
