import { writeFileSync } from 'node:fs';
import { Messages } from '../contract/message.ts';
import { recordRun } from '../replay/recorder.ts';
import { deterministicEnv } from '../runtime/env.ts';
import { DEMO_TOOLS, demoAgent } from './demo.ts';
import { decisionsFor, type Io } from './run-command.ts';
import { modelOf, parseRunArgs, RUN_USAGE } from './run-plan.ts';

export const RECORD_USAGE = `usage: awaken record --out FILE -- [run] <awaken run arguments>

Runs like \`awaken run\` with every port recorded, and writes the transcript to FILE
(docs/transcript-format.md). Replay it with \`awaken replay FILE\`.
`;

/** `awaken record --out FILE -- run …`. */
export async function recordCommand(argv: readonly string[], io: Io, version: string): Promise<number> {
  const sep = argv.indexOf('--');
  const own = sep >= 0 ? argv.slice(0, sep) : argv;
  const rest = sep >= 0 ? argv.slice(sep + 1) : [];
  const outAt = own.indexOf('--out');
  const out = outAt >= 0 ? own[outAt + 1] : undefined;
  if (out === undefined || sep < 0) {
    io.err(`awaken record: ${out === undefined ? '--out FILE is required' : "expected '-- <awaken run arguments>' after the options"}\n${RECORD_USAGE}`);
    return 64;
  }
  // `-- run --model …` and `-- --model …` both name the arguments of `awaken run`.
  const plan = parseRunArgs(rest[0] === 'run' ? rest.slice(1) : rest);
  if (typeof plan === 'string') {
    io.err(`awaken record: ${plan}\n${RUN_USAGE}`);
    return 64;
  }
  const llm = modelOf(plan.model);
  if (typeof llm === 'string') {
    io.err(`awaken record: ${llm}\n`);
    return llm.startsWith('only ') ? 64 : 65;
  }
  const decide = plan.decide;
  const recording = await recordRun(
    {
      agent: { ...demoAgent('model'), id: plan.agent === 'demo' ? 'demo' : plan.agent },
      models: { model: { provider: 'model', model_name: plan.model.split(':')[0] as string } },
      providers: { model: llm },
      tools: DEMO_TOOLS,
      env: { env: deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, seed: 42, tick: 0 } },
      request: { messages: [Messages.user(plan.message)] },
      ...(decide !== undefined ? { decide: (ids: readonly string[]) => decisionsFor(decide, ids, 1_700_000_000_000) } : {}),
    },
    `awaken-ts@${version}`,
  );
  writeFileSync(out, recording.transcript);
  io.out(`recorded ${recording.transcript.split('\n').length - 1} lines to ${out}: ${recording.result.termination.type} after ${recording.result.steps} step(s)\n`);
  return 0;
}
