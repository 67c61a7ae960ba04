import { writeFileSync } from 'node:fs';
import { Messages } from '../contract/message.ts';
import { recordRun } from '../replay/recorder.ts';
import { deterministicEnv } from '../runtime/env.ts';
import { DEMO_TOOLS, demoAgent } from './demo.ts';
import { CliFailure, runCli, stringOf, UsageError, type CommandSpec, type Io } from './args.ts';
import { EXIT } from './exit.ts';
import { decisionsFor } from './run-command.ts';
import { modelOf, parseRunArgs } from './run-plan.ts';

export const RECORD_USAGE = `usage: awaken record --out FILE -- [run] <awaken run arguments>

Runs like \`awaken run\` with every port recorded, and writes the transcript to FILE
(docs/transcript-format.md). Replay it with \`awaken replay FILE\`.
`;

export const RECORD_COMMAND: CommandSpec = { command: 'record', usage: RECORD_USAGE, options: { out: { type: 'string' } }, positionals: { min: 0, max: Infinity, name: 'the run arguments' } };

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

async function record(plan: Exclude<ReturnType<typeof parseRunArgs>, 'help'>, out: string, io: Io): Promise<number> {
  const llm = modelOf(plan.model);
  const decide = plan.decide;
  const recording = await recordRun({
    agent: { ...demoAgent('model'), id: plan.agent === 'demo' ? 'demo' : plan.agent },
    models: { model: { provider: 'model', model_name: plan.model.split(':')[0] as string } },
    providers: { model: llm },
    tools: DEMO_TOOLS,
    env: { env: deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, seed: 42, tick: 0 } },
    request: { messages: [Messages.user(plan.message)] },
    ...(decide !== undefined ? { decide: (ids: readonly string[]) => decisionsFor(decide, ids, 1_700_000_000_000) } : {}),
  });
  try {
    writeFileSync(out, recording.transcript);
  } catch (e) {
    throw new CliFailure(`cannot write ${out}: ${e instanceof Error ? e.message : String(e)}`, EXIT.noInput);
  }
  io.out(`recorded ${recording.transcript.split('\n').length - 1} lines to ${out}: ${recording.result.termination.type} after ${recording.result.steps} step(s)\n`);
  return EXIT.ok;
}
