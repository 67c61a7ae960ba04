import { writeFileSync } from 'node:fs';
import type { AgentSpec } from '../contract/agent-spec.ts';
import { Messages } from '../contract/message.ts';
import { pluginsById } from '../app/compose.ts';
import { recordRun, type RecordingSetup } from '../replay/recorder.ts';
import { deterministicEnv } from '../runtime/env.ts';
import { DEMO_TOOLS, demoAgent } from './demo.ts';
import { CliFailure, runCli, stringOf, UsageError, type CommandSpec, type Io } from './args.ts';
import { EXIT } from './exit.ts';
import { decisionsFor } from './run-command.ts';
import { appOption, checkApp } from './app-option.ts';
import { agentNamed } from './config-runtime.ts';
import { modelOf, parseRunArgs, type RunPlan } from './run-plan.ts';
import { RECORD_USAGE } from './usages.ts';

export { RECORD_USAGE };

export const RECORD_COMMAND: CommandSpec = {
  command: 'record',
  usage: RECORD_USAGE,
  options: { out: { type: 'string' } },
  positionals: { min: 0, max: Infinity, name: 'the run arguments' },
};

/** `awaken record --out FILE -- run …`. */
export async function recordCommand(argv: readonly string[], io: Io): Promise<number> {
  // The options before `--` are record's; after it come `awaken run`'s.
  const sep = argv.indexOf('--');
  const own = sep >= 0 ? argv.slice(0, sep) : argv;
  const rest = sep >= 0 ? argv.slice(sep + 1) : [];
  return runCli(RECORD_COMMAND, own, io, async (args) => {
    const out = stringOf(args, 'out');
    if (out === undefined) throw new UsageError('--out FILE is required');
    if (args.positionals.length > 0 || sep < 0) throw new UsageError("expected '-- <awaken run arguments>' after the options");
    // `-- run --model …` and `-- --model …` both name the arguments of `awaken run`.
    const plan = parseRunArgs(rest[0] === 'run' ? rest.slice(1) : rest);
    if (plan === 'help') throw new UsageError("the run arguments after '--' are awaken run's: see awaken run --help");
    return record(plan, out, io);
  });
}

/** What the recorder runs a plan with: the demo agent on its model, or the app's agent with the app's code. */
async function setupOf(plan: RunPlan): Promise<Omit<RecordingSetup, 'env' | 'request' | 'decide'>> {
  if (plan.app === undefined) {
    return {
      agent: { ...demoAgent('model'), id: plan.agent ?? 'demo' },
      models: { model: { provider: 'model', model_name: plan.model.split(':')[0] as string } },
      providers: { model: modelOf(plan.model) },
      tools: DEMO_TOOLS,
    };
  }
  const loaded = await appOption(plan.app);
  checkApp(loaded);
  const { app } = loaded;
  const agent = agentNamed(app.agents, plan.agent, loaded.file);
  const delegates = delegatesOf(app.agents, agent);
  const own = pluginsById(app);
  return {
    agent,
    models: app.models,
    providers: app.providers,
    tools: app.tools,
    // The plugins the agent and its delegates run with: the catalog's by id, the app's as they are
    // (each recorded with its factory and config, so that a replay with the app makes it again).
    plugins: [...new Set([agent, ...delegates].flatMap((a) => a.plugin_ids))].map((id) => own.get(id) ?? id),
    stopPolicies: app.stopPolicies,
    app: { file: loaded.file, version: loaded.version },
    ...(delegates.length > 0 ? { delegates } : {}),
  };
}

/** The app's agents `agent` delegates to, and those they delegate to, in turn (a remote one is left to its endpoint). */
function delegatesOf(agents: readonly AgentSpec[], agent: AgentSpec): AgentSpec[] {
  const byId = new Map(agents.map((a) => [a.id, a]));
  const found = new Map<string, AgentSpec>();
  const visit = (a: AgentSpec): void => {
    for (const id of a.delegates) {
      const d = byId.get(id);
      if (d === undefined || d.id === agent.id || found.has(id)) continue;
      found.set(id, d);
      visit(d);
    }
  };
  visit(agent);
  return [...found.values()];
}

async function record(plan: RunPlan, out: string, io: Io): Promise<number> {
  const decide = plan.decide;
  const recording = await recordRun({
    ...(await setupOf(plan)),
    env: { env: deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, seed: 42, tick: 0 } },
    request: { messages: [Messages.user(plan.message)] },
    ...(decide !== undefined ? { decide: (ids: readonly string[]) => decisionsFor(decide, ids, 1_700_000_000_000) } : {}),
  });
  try {
    writeFileSync(out, recording.transcript);
  } catch (e) {
    throw new CliFailure(`cannot write ${out}: ${e instanceof Error ? e.message : String(e)}`, EXIT.noInput);
  }
  io.out(
    `recorded ${recording.transcript.split('\n').length - 1} lines to ${out}: ${recording.result.termination.type} after ${recording.result.steps} step(s)\n`,
  );
  return EXIT.ok;
}
