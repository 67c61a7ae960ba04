import { fileLines } from '../replay/lines.ts';
import { replayFiles, type ReportFormat } from '../replay/report.ts';
import { choiceOf, CliFailure, runCli, UsageError, type CommandSpec, type Io } from './args.ts';
import { EXIT } from './exit.ts';

export const REPLAY_USAGE = `usage: awaken replay FILE… [--format table|pretty|json] [--json]

Replays each transcript and compares the new event stream with the recorded one byte for byte.
--format table (default) lists the files and each divergence; pretty shows where each one left the
recording side by side, the recorded record or event beside what the replay did now (| changed,
< only recorded, > only now); json (also --json) prints the reports.
Exit 0 iff every file replays identically; 66 when a FILE cannot be read, 65 when one is no transcript.
`;

const FORMATS: readonly ReportFormat[] = ['table', 'pretty', 'json'];

export const REPLAY_COMMAND: CommandSpec = {
  command: 'replay',
  usage: REPLAY_USAGE,
  options: { json: { type: 'boolean' }, format: { type: 'string' } },
  positionals: { min: 1, max: Infinity, name: 'a transcript FILE' },
};

/**
 * Why `file` cannot be replayed at all, if it cannot: it cannot be read (missing input), or its first
 * line is no transcript header, of any format (bad data). What a transcript holds past its header is
 * the replay's to judge: a record that no longer matches is a difference, not bad input.
 */
function unreplayable(file: string): CliFailure | undefined {
  // The first line only: the replay reads the whole file after.
  let first: string | undefined;
  try {
    for (const line of fileLines(file)) {
      if (line.trim() === '') continue;
      first = line;
      break;
    }
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return new CliFailure(`cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'a directory' : e instanceof Error ? e.message : String(e)}`, EXIT.noInput);
  }
  if (first === undefined) return new CliFailure(`${file}: not a transcript: the file is empty`, EXIT.data);
  let header: unknown;
  try {
    header = JSON.parse(first);
  } catch (e) {
    return new CliFailure(`${file}:1: not a transcript: not JSON: ${e instanceof Error ? e.message : String(e)}`, EXIT.data);
  }
  const { type, format } = typeof header === 'object' && header !== null ? (header as { type?: unknown; format?: unknown }) : {};
  if (type !== 'header' || typeof format !== 'string' || !format.startsWith('awaken-transcript/')) return new CliFailure(`${file}:1: not a transcript: the first line is no transcript header`, EXIT.data);
  return undefined;
}

/** `awaken replay FILE… [--format table|pretty|json]`. */
export async function replayCommand(argv: readonly string[], io: Io): Promise<number> {
  return runCli(REPLAY_COMMAND, argv, io, (args) => {
    const format = choiceOf(args, 'format', FORMATS);
    if (format !== undefined && args.values['json'] === true && format !== 'json') throw new UsageError('--json and --format ' + format + ' say two things: give one');
    // Every file is checked before any is replayed: what is no transcript stops the command at once.
    for (const file of args.positionals) {
      const failure = unreplayable(file);
      if (failure !== undefined) throw failure;
    }
    return replayFiles(args.positionals, io, args.values['json'] === true ? 'json' : (format ?? 'table'), { width: Math.max(30, Math.floor(((process.stdout.columns ?? 130) - 8) / 2)) });
  });
}
