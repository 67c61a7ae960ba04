import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parseScript, ScriptedLlm } from '../providers/scripted.ts';
import { TranscriptLlm } from '../providers/transcript-llm.ts';
import { migrateTranscript, olderFormat } from '../replay/migrate.ts';
import { readTranscript } from '../replay/transcript.ts';
import type { LlmExecutor } from '../runtime/llm.ts';
import { choiceOf, CliFailure, parseCommand, stringOf, UsageError, type CommandSpec } from './args.ts';
import { cannotRead } from './cannot-read.ts';
import { EXIT } from './exit.ts';
import { RUN_USAGE } from './usages.ts';

export { RUN_USAGE };

export const RUN_COMMAND: CommandSpec = {
  command: 'run',
  usage: RUN_USAGE,
  options: { model: { type: 'string' }, app: { type: 'string' }, agent: { type: 'string' }, format: { type: 'string' }, decide: { type: 'string' } },
  positionals: { min: 1, max: 1, name: 'a message' },
};

/** What `awaken run` (and `awaken record`) is asked to do: the demo agent on `--model`, or an app's agent (`--app`). */
export type RunPlan = RunOn & {
  /** `--agent`; absent: the demo agent, or the app's first. */
  readonly agent: string | undefined;
  readonly format: 'jsonl' | 'pretty';
  readonly decide: 'approve' | 'deny' | undefined;
  readonly message: string;
};

/** What a run runs on: a file-backed model for the demo agent, or an app module with models of its own. */
export type RunOn = { readonly model: string; readonly app?: undefined } | { readonly app: string; readonly model?: undefined };

/** The plan of an `awaken run` command line, or `'help'`; a mistake is a `UsageError`. */
export function parseRunArgs(argv: readonly string[]): RunPlan | 'help' {
  const args = parseCommand(RUN_COMMAND, argv);
  if (args === 'help') return 'help';
  const model = stringOf(args, 'model');
  const app = stringOf(args, 'app');
  if (app !== undefined && model !== undefined) throw new UsageError("--model sets the demo agent's model; with --app the app's models answer");
  if (app === undefined && model === undefined) throw new UsageError('--model is required (scripted:FILE or transcript:FILE), or --app FILE');
  return {
    ...(app !== undefined ? { app } : { model: model as string }),
    agent: stringOf(args, 'agent'),
    format: choiceOf(args, 'format', ['jsonl', 'pretty'] as const) ?? 'jsonl',
    decide: choiceOf(args, 'decide', ['approve', 'deny'] as const),
    message: args.positionals[0] as string,
  };
}

/**
 * The models a `--model` value names: the file is read and parsed once, and each call of the
 * returned function is a fresh executor that runs it from its start. Only file-backed models exist
 * offline; anything else is a usage mistake, a file that cannot be read a missing input, one that
 * does not parse bad data (`CliFailure`, each with its exit code).
 */
export function modelFactoryOf(model: string): (turnsTaken?: number) => LlmExecutor {
  const [kind, ...pathParts] = model.split(':');
  const file = pathParts.join(':');
  if ((kind !== 'scripted' && kind !== 'transcript') || file === '') {
    throw new CliFailure(
      `only scripted:FILE and transcript:FILE models are available here, not '${model}' (awaken serve --model also takes provider:model)`,
      EXIT.usage,
    );
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw cannotRead(file, e);
  }
  if (kind === 'scripted') {
    let steps: ReturnType<typeof parseScript>;
    try {
      steps = parseScript(text, extname(file) === '.json' ? 'json' : 'yaml');
    } catch (e) {
      throw new CliFailure(`cannot read script ${file}: ${e instanceof Error ? e.message : String(e)}`, EXIT.data);
    }
    // A conversation with turns already taken goes on with the step after them.
    return (turnsTaken = 0) => new ScriptedLlm(steps.slice(turnsTaken), { record: false });
  }
  // An older transcript is read in the current format (its llm records are written differently).
  if (olderFormat(text) !== undefined) {
    try {
      text = migrateTranscript(text);
    } catch (e) {
      throw new CliFailure(`cannot read transcript ${file}: ${e instanceof Error ? e.message : String(e)}`, EXIT.data);
    }
  }
  const inferences = readTranscript(text).flatMap((l) =>
    l.ok && l.record.type === 'llm' ? [{ parts: l.record.parts, ...(l.record.error !== undefined ? { error: l.record.error } : {}) }] : [],
  );
  if (inferences.length === 0) throw new CliFailure(`${file} holds no recorded inference`, EXIT.data);
  return () => new TranscriptLlm(inferences as never);
}

/** One executor of the model a `--model` value names (see `modelFactoryOf`). */
export const modelOf = (model: string): LlmExecutor => modelFactoryOf(model)();
