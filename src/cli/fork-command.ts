import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { LoadedApp } from '../app/load.ts';
import { unreachable } from '../contract/never.ts';
import { readEditLine } from '../replay/edit-line.ts';
import { forkTranscript, type ForkEdit, type ForkErrorCode } from '../replay/fork.ts';
import { CliFailure, UsageError, type Io } from './args.ts';
import { cannotRead } from './cannot-read.ts';
import { EXIT } from './exit.ts';
import { isCatalogModel } from '../providers/catalog.ts';
import { modelOf } from './run-plan.ts';
import { namedModel } from './serve-parts.ts';

/** What `awaken replay FILE --fork-at STEP` is told besides the file. */
export interface ForkRequest {
  readonly file: string;
  readonly atStep: string;
  readonly edits: readonly string[];
  readonly model: string | undefined;
  readonly out: string | undefined;
  readonly loaded: LoadedApp | undefined;
}

/** `--edit PATH=JSON`: the path into the fork point and the value, or a usage error naming the edit. */
function editOf(text: string): ForkEdit {
  const line = readEditLine(text);
  if (line.ok) return { path: line.path, value: line.value };
  if (line.problem === 'no_equals') throw new UsageError(`--edit ${text}: give PATH=JSON (/agent/system_prompt='"Be brief."')`);
  throw new UsageError(`--edit ${line.path}: the value is not JSON (a string is quoted: '"text"')`);
}

/** The exit code of a fork that was not made: the command line asked what the run cannot give (64), or the transcript cannot be forked (65), or it no longer replays (1). */
function exitOf(code: ForkErrorCode): number {
  switch (code) {
    case 'step_past_end':
    case 'no_such_field':
    case 'invalid_edit':
    case 'model_required':
    case 'tool_required':
      return EXIT.usage;
    case 'unreadable':
    case 'cannot_run':
      return EXIT.data;
    case 'prefix_diverges':
      return EXIT.failed;
    default:
      return unreachable(code);
  }
}

/** The child's file: beside the parent, `NAME.fork-STEP.jsonl`. */
const childFileOf = (file: string, step: number): string => `${file.replace(/\.jsonl$/, '')}.fork-${step}.jsonl`;

/**
 * `awaken replay FILE --fork-at STEP [--edit PATH=JSON]… [--model scripted:FILE|transcript:FILE|PROVIDER:MODEL]
 * [--app FILE] [--out FILE]`: the run replayed to the end of STEP, edited, and gone on from there;
 * the child transcript written, three lines said.
 */
export async function forkCommand(request: ForkRequest, io: Io): Promise<number> {
  const { file } = request;
  if (!/^[1-9]\d{0,8}$/.test(request.atStep)) throw new UsageError(`--fork-at ${request.atStep}: a step number, from 1`);
  const atStep = Number(request.atStep);
  const edits = request.edits.map(editOf);
  const out = request.out ?? childFileOf(file, atStep);
  if (resolve(out) === resolve(file)) throw new UsageError(`--out ${out} is the transcript forked: give the child another file`);
  const named = request.model !== undefined && isCatalogModel(request.model) ? request.model : undefined;
  const scripted = request.model !== undefined && named === undefined ? modelOf(request.model) : undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw cannotRead(file, e);
  }
  // A provider's model is made once the transcript is there: a missing file is said first (66).
  const model = named !== undefined ? (await namedModel(named, process.env, '--model')).llm : scripted;
  const app = request.loaded?.app;
  const forked = await forkTranscript(text, {
    atStep,
    edits,
    parentName: file,
    ...(model !== undefined ? { model } : {}),
    ...(app !== undefined ? { app: { plugins: app.plugins, stopPolicies: app.stopPolicies }, tools: app.tools } : {}),
  });
  if (!forked.ok) throw new CliFailure(`${file}: ${forked.error.message}`, exitOf(forked.error.code));
  try {
    writeFileSync(out, forked.transcript);
  } catch (e) {
    throw new CliFailure(`${out}: cannot write the fork: ${e instanceof Error ? e.message : String(e)}`, EXIT.noInput);
  }
  const { result } = forked;
  io.out(
    `${[
      `forked ${file} at step ${atStep} → ${out}`,
      `prefix: ${forked.eventsBefore} event(s), replayed as recorded${edits.length > 0 ? `; ${edits.length} edit(s): ${edits.map((e) => e.path).join(', ')}` : ''}`,
      `suffix: ${result.steps - atStep} step(s), ${result.termination.type}; inferences answered by the recording: ${forked.inferences.recorded}, by the model: ${forked.inferences.model}`,
    ].join('\n')}\n`,
  );
  return EXIT.ok;
}
