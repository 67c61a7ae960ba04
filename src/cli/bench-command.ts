import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { AgentSpec } from '../contract/agent-spec.ts';
import type { Plugin } from '../core/phase/plugin.ts';
import { PLUGIN_CATALOG } from '../plugins/catalog.ts';
import { parseScript, stepParts } from '../providers/scripted.ts';
import { AgentRuntimeBuilder } from '../runtime/agent-runtime.ts';
import { realEnv } from '../runtime/env.ts';
import type { RuntimePlugin } from '../runtime/resolve.ts';
import type { Tool } from '../runtime/tool.ts';
import { type AgentBenchReport, benchAgent, renderAgentBench } from '../testing/bench-agent.ts';
import { buildFailure, CliFailure, runCli, stringOf, stringsOf, UsageError, type CommandSpec, type Io } from './args.ts';
import { cannotRead } from './cannot-read.ts';
import { demoAgent, DEMO_TOOLS } from './demo.ts';
import { EXIT } from './exit.ts';
import { appOption } from './app-option.ts';
import { agentNamed, configBesideApp } from './config-runtime.ts';
import { loadServeConfig } from './serve-config.ts';
import { loadPluginModule } from './plugin-module.ts';
import { BENCH_USAGE } from './usages.ts';

export { BENCH_USAGE };

export const BENCH_COMMAND: CommandSpec = {
  command: 'bench',
  usage: BENCH_USAGE,
  options: {
    model: { type: 'string' },
    app: { type: 'string' },
    config: { type: 'string' },
    agent: { type: 'string' },
    plugin: { type: 'string', multiple: true },
    steps: { type: 'string' },
    rounds: { type: 'string' },
    json: { type: 'boolean' },
  },
};

/** The node flags the allocation column needs: a young generation no batch fills, and a collector to call. */
const BENCH_FLAGS = ['--expose-gc', '--min-semi-space-size=256', '--max-semi-space-size=256'];

const loadPlugin = async (file: string): Promise<RuntimePlugin> => (await loadPluginModule(file)).plugin as RuntimePlugin;

/** `awaken bench`: a user's agent beside the fair floors. */
export async function benchCommand(argv: readonly string[], io: Io): Promise<number> {
  return runCli(BENCH_COMMAND, argv, io, async (args) => {
    const model = stringOf(args, 'model');
    if (model === undefined || !model.startsWith('scripted:')) throw new UsageError('--model scripted:FILE is required (a bench runs on a scripted model)');
    const steps = (stringOf(args, 'steps') ?? '10,100,1000').split(',').map((s) => {
      if (!/^\d+$/.test(s.trim()) || Number(s) < 1) throw new UsageError(`--steps takes run lengths like 10,100,1000, not '${s}'`);
      return Number(s);
    });
    const roundsText = stringOf(args, 'rounds') ?? '15';
    if (!/^\d+$/.test(roundsText) || Number(roundsText) < 1) throw new UsageError(`--rounds must be a positive integer, not '${roundsText}'`);

    // The process that runs the bench needs V8 flags; `awaken bench` started without them starts itself again with them.
    if ((globalThis as { gc?: unknown }).gc === undefined && process.argv[2] === 'bench' && process.env['AWAKEN_BENCH_CHILD'] !== '1') {
      const child = spawnSync(process.execPath, [...BENCH_FLAGS, ...process.execArgv, ...process.argv.slice(1)], {
        stdio: 'inherit',
        env: { ...process.env, AWAKEN_BENCH_CHILD: '1' },
      });
      return child.status ?? EXIT.internal;
    }
    if ((globalThis as { gc?: unknown }).gc === undefined) {
      setFlagsFromString('--expose-gc');
      (globalThis as { gc?: unknown }).gc = runInNewContext('gc') as () => void;
    }

    const file = model.slice('scripted:'.length);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw cannotRead(file, e);
    }
    let script: ReturnType<typeof stepParts>[];
    try {
      script = parseScript(text, extname(file) === '.json' ? 'json' : 'yaml').map(stepParts);
    } catch (e) {
      throw new CliFailure(`cannot read script ${file}: ${e instanceof Error ? e.message : String(e)}`, EXIT.data);
    }
    const appFile = stringOf(args, 'app');
    const loaded = appFile === undefined ? undefined : await appOption(appFile);
    const plugins = await Promise.all(stringsOf(args, 'plugin').map(loadPlugin));
    const extra = plugins.map((p) => p.name);
    const own = loaded === undefined ? [] : loaded.app.plugins;
    const known = new Map<string, RuntimePlugin>([...PLUGIN_CATALOG, ...own.map((p) => [p.name, p] as const), ...plugins.map((p) => [p.name, p] as const)]);
    const configFile = stringOf(args, 'config');
    const config =
      loaded !== undefined ? configBesideApp(loaded, configFile, plugins) : configFile !== undefined ? loadServeConfig(configFile, known, extra) : undefined;
    const configured = (config?.agents ?? []) as AgentSpec[];
    const spec =
      loaded !== undefined
        ? agentNamed(
            [...loaded.app.agents, ...configured],
            stringOf(args, 'agent'),
            configFile === undefined ? loaded.file : `${loaded.file} and ${configFile}`,
          )
        : (() => {
            const agentId = stringOf(args, 'agent') ?? 'demo';
            const agents = [demoAgent('demo') as AgentSpec, ...configured];
            const found = agents.find((a) => a.id === agentId);
            if (found === undefined) throw new CliFailure(`no agent '${agentId}' (agents: ${agents.map((a) => a.id).join(', ')})`, EXIT.data);
            return found;
          })();
    // A plugin a config's agent names must be here: in the catalog, the app, or loaded with --plugin
    // (the app's own agents are checked with the app).
    const at = configured.indexOf(spec);
    if (at >= 0) {
      (spec.plugin_ids ?? []).forEach((id, j) => {
        if (!known.has(id))
          throw new CliFailure(
            `${configFile ?? ''}: agents[${at}].plugin_ids[${j}]: no plugin '${id}' (${loaded !== undefined ? `the app's: ${own.map((p) => p.name).join(', ') || 'none'}; load another` : 'load it'} with --plugin FILE)`,
            EXIT.data,
          );
      });
    }
    const agentId = spec.id;
    const tools = new Map<string, Tool>((loaded?.app.tools ?? DEMO_TOOLS).map((t) => [t.descriptor.id, t]));

    const runtime = (llm: Parameters<Parameters<typeof benchAgent>[0]['runtime']>[0], maxRounds: number, wrap: (p: Plugin) => Plugin = (p) => p) => {
      const builder = new AgentRuntimeBuilder()
        .withEnv(realEnv())
        .withProvider('bench', llm)
        .withModel('bench', { provider: 'bench', model_name: 'bench' })
        // A plugin given with --plugin is active for the agent, as if its plugin_ids named it.
        .withAgentSpec({
          ...spec,
          model: 'bench',
          max_rounds: maxRounds,
          plugin_ids: [...new Set([...(spec.plugin_ids ?? []), ...plugins.map((p) => p.name)])],
        });
      for (const tool of tools.values()) builder.withTool(tool);
      for (const [id, p] of PLUGIN_CATALOG) builder.withPlugin(id, wrap(p) as RuntimePlugin);
      for (const p of [...own, ...plugins]) builder.withPlugin(p.name, wrap(p) as RuntimePlugin);
      const built = builder.build();
      if (!built.ok) throw buildFailure(configFile ?? loaded?.file ?? 'the agents', built.error);
      return built.value;
    };
    let report: AgentBenchReport;
    try {
      report = await benchAgent({ script, tools, runtime, agentId, steps, rounds: Number(roundsText), progress: (line) => io.err(`${line}\n`) });
    } catch (e) {
      if (e instanceof CliFailure) throw e;
      throw new CliFailure(e instanceof Error ? e.message : String(e), EXIT.data);
    }
    io.out(args.values['json'] === true ? `${JSON.stringify(report, null, 2)}\n` : renderAgentBench(report));
    return EXIT.ok;
  });
}
