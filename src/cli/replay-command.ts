import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { LoadedApp } from '../app/load.ts';
import {
  baselineRuns,
  ExpectationsError,
  FolderReadError,
  readExpectations,
  renderGate,
  replayBaseline,
  transcriptsUnder,
  type ReplayExpectations,
} from '../replay/gate.ts';
import { fileLines } from '../replay/lines.ts';
import type { AppCode, MissingCode } from '../replay/plugins.ts';
import { missingCode } from '../replay/replayer.ts';
import { replayFiles, type ReportFormat } from '../replay/report.ts';
import { appOption } from './app-option.ts';
import { choiceOf, CliFailure, runCli, stringOf, stringsOf, UsageError, type CommandSpec, type Io } from './args.ts';
import { cannotRead } from './cannot-read.ts';
import { EXIT } from './exit.ts';
import { REPLAY_USAGE } from './usages.ts';
import { unreachable } from '../contract/never.ts';

export { REPLAY_USAGE };

const FORMATS: readonly ReportFormat[] = ['table', 'pretty', 'json'];

export const REPLAY_COMMAND: CommandSpec = {
  command: 'replay',
  usage: REPLAY_USAGE,
  options: {
    json: { type: 'boolean' },
    format: { type: 'string' },
    app: { type: 'string' },
    baseline: { type: 'boolean' },
    expect: { type: 'string' },
    'fork-at': { type: 'string' },
    edit: { type: 'string', multiple: true },
    model: { type: 'string' },
    out: { type: 'string' },
  },
  positionals: { min: 1, max: Infinity, name: 'a transcript FILE or a DIR of them' },
};

/**
 * Why `file` cannot be replayed at all, if it cannot: it cannot be read (missing input), or its first
 * line is no transcript header, of any format (bad data); else that line and its header. What a
 * transcript holds past its header is the replay's to judge: a record that no longer matches is a
 * difference, not bad input.
 */
function unreplayable(file: string): CliFailure | { readonly first: string; readonly header: { readonly app?: unknown } } {
  // The first line only: the replay reads the whole file after.
  let first: string | undefined;
  try {
    for (const line of fileLines(file)) {
      if (line.trim() === '') continue;
      first = line;
      break;
    }
  } catch (e) {
    return cannotRead(file, e);
  }
  if (first === undefined) return new CliFailure(`${file}: not a transcript: the file is empty`, EXIT.data);
  let header: unknown;
  try {
    header = JSON.parse(first);
  } catch (e) {
    return new CliFailure(`${file}:1: not a transcript: not JSON: ${e instanceof Error ? e.message : String(e)}`, EXIT.data);
  }
  const { type, format } = typeof header === 'object' && header !== null ? (header as { type?: unknown; format?: unknown }) : {};
  if (type !== 'header' || typeof format !== 'string' || !format.startsWith('awaken-transcript/'))
    return new CliFailure(`${file}:1: not a transcript: the first line is no transcript header`, EXIT.data);
  return { first, header: header as { app?: unknown } };
}

/**
 * Why the code a transcript's header names cannot be had, if it cannot: a plugin or stop policy that
 * is neither built in nor in the app (bad data, naming it). Without an app the line says which app
 * the run was recorded with, when its header says.
 */
function codeMissing(file: string, first: string, header: { readonly app?: unknown }, loaded: LoadedApp | undefined): CliFailure | undefined {
  const missing = missingCode(first, loaded === undefined ? {} : { app: codeOf(loaded) });
  if (missing === undefined) return undefined;
  if (loaded !== undefined) return new CliFailure(`${file}:1: ${missing.message} ${loaded.file}`, EXIT.data);
  const recordedWith = (header.app as { file?: unknown } | undefined)?.file;
  const hint =
    typeof recordedWith === 'string'
      ? `replay it with --app ${recordedWith} (the app it was recorded with)`
      : 'replay it with --app FILE (the app that has it)';
  return new CliFailure(`${file}:1: ${notBuiltIn(missing)}: ${hint}`, EXIT.data);
}

function notBuiltIn(missing: MissingCode): string {
  switch (missing.kind) {
    case 'plugin':
      return `plugin '${missing.id}'${missing.factory !== undefined ? ` (factory '${missing.factory}')` : ''} is not built in`;
    case 'stop_policy':
      return `custom stop policy '${missing.id}' is not built in`;
    default:
      return unreachable(missing);
  }
}

/**
 * Every file checked before any is replayed: the first that is no transcript, or names code that is
 * not here, stops the command at once (thrown).
 */
function refuseUnreplayable(files: readonly string[], loaded: LoadedApp | undefined): void {
  for (const file of files) {
    const read = unreplayable(file);
    if (read instanceof CliFailure) throw read;
    const missing = codeMissing(file, read.first, read.header, loaded);
    if (missing !== undefined) throw missing;
  }
}

/** The code of an app a replay runs: its plugins and stop policies. */
const codeOf = (loaded: LoadedApp): AppCode => ({ plugins: loaded.app.plugins, stopPolicies: loaded.app.stopPolicies });

/** What `read` gives, a folder's entry it cannot read being one line, exit 66. */
function readable<T>(read: () => T): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof FolderReadError) throw new CliFailure(e.message, EXIT.noInput);
    throw e;
  }
}

/** Whether `path` is a folder (not when it cannot be read: the replay says why). */
function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * `awaken replay DIR --baseline [--expect FILE]`: every transcript under DIR replayed, each
 * divergence in its class, those the manifest expects accepted; exit 0 iff each run is identical or
 * accepted.
 */
async function baseline(dir: string, expectFile: string | undefined, loaded: LoadedApp | undefined, json: boolean, io: Io): Promise<number> {
  let isDir: boolean;
  try {
    isDir = statSync(dir).isDirectory();
  } catch (e) {
    throw cannotRead(dir, e, 'folder');
  }
  if (!isDir) throw new UsageError(`${dir} is a file: --baseline replays the transcripts in a folder`);
  const runs = readable(() => baselineRuns(dir));
  if (runs.length === 0) throw new CliFailure(`${dir}: no transcript (*.jsonl) in it`, EXIT.noInput);
  refuseUnreplayable(
    runs.map(({ name }) => join(dir, name)),
    loaded,
  );
  let expectations: ReplayExpectations | undefined;
  if (expectFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(expectFile, 'utf8');
    } catch (e) {
      throw cannotRead(expectFile, e);
    }
    try {
      expectations = readExpectations(
        text,
        runs.map((r) => r.name),
      );
    } catch (e) {
      if (e instanceof ExpectationsError) throw new CliFailure(`${expectFile}: ${e.message}`, EXIT.data);
      throw e;
    }
  }
  const report = await replayBaseline(runs, {
    ...(loaded !== undefined ? { app: codeOf(loaded), agents: loaded.app.agents } : {}),
    ...(expectations !== undefined ? { expectations } : {}),
    onRun: (run, i, of) => {
      const line = `[${i + 1}/${of}] ${run.identical ? 'identical' : 'DIFFERS  '} ${join(dir, run.run)}`;
      if (io.progress !== undefined) io.progress(line);
      else io.err(`${line}\n`);
    },
  });
  io.progress?.('');
  io.out(json ? `${JSON.stringify(report, null, 2)}\n` : renderGate(report, (run) => join(dir, run)));
  return report.passed ? EXIT.ok : EXIT.failed;
}

/** `awaken replay [--app FILE] FILE… [--format table|pretty|json]`. */
export async function replayCommand(argv: readonly string[], io: Io): Promise<number> {
  return runCli(REPLAY_COMMAND, argv, io, async (args) => {
    const format = choiceOf(args, 'format', FORMATS);
    if (format !== undefined && args.values['json'] === true && format !== 'json')
      throw new UsageError(`--json and --format ${format} say two things: give one`);
    const expectFile = stringOf(args, 'expect');
    if (args.values['baseline'] !== true && expectFile !== undefined) throw new UsageError('--expect names what --baseline accepts: give --baseline too');
    if (args.values['baseline'] === true) {
      if (format === 'pretty') throw new UsageError('--baseline prints a table or, with --json, JSON: not --format pretty');
      if (args.positionals.length !== 1) throw new UsageError(`--baseline replays one folder: give one DIR, not ${args.positionals.length}`);
    }
    const forkAt = stringOf(args, 'fork-at');
    const forkOnly = (['edit', 'model', 'out'] as const).find((o) => args.values[o] !== undefined);
    if (forkAt === undefined && forkOnly !== undefined) throw new UsageError(`--${forkOnly} is an option of a fork: give --fork-at STEP too`);
    if (forkAt !== undefined) {
      const other = (['baseline', 'json', 'format'] as const).find((o) => args.values[o] !== undefined);
      if (other !== undefined) throw new UsageError(`--fork-at writes a child transcript: not with --${other}`);
      if (args.positionals.length !== 1) throw new UsageError(`--fork-at forks one transcript: give one FILE, not ${args.positionals.length}`);
    }
    const appFile = stringOf(args, 'app');
    const loaded = appFile === undefined ? undefined : await appOption(appFile);
    if (forkAt !== undefined) {
      const { forkCommand } = await import('./fork-command.ts');
      return forkCommand(
        {
          file: args.positionals[0] as string,
          atStep: forkAt,
          edits: stringsOf(args, 'edit'),
          model: stringOf(args, 'model'),
          out: stringOf(args, 'out'),
          loaded,
        },
        io,
      );
    }
    if (args.values['baseline'] === true)
      return baseline(args.positionals[0] as string, expectFile, loaded, args.values['json'] === true || format === 'json', io);
    // A folder stands for the transcripts in it.
    const files = args.positionals.flatMap((file) => {
      if (!isFolder(file)) return [file];
      const inside = readable(() => transcriptsUnder(file));
      if (inside.length === 0) throw new CliFailure(`${file}: no transcript (*.jsonl) in it`, EXIT.noInput);
      return inside.map((name) => join(file, name));
    });
    refuseUnreplayable(files, loaded);
    return replayFiles(files, io, args.values['json'] === true ? 'json' : (format ?? 'table'), {
      width: Math.max(30, Math.floor(((process.stdout.columns ?? 130) - 8) / 2)),
      ...(loaded !== undefined ? { app: codeOf(loaded) } : {}),
    });
  });
}
