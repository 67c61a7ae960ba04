import { replayFiles, type ReportFormat } from '../replay/report.ts';
import { choiceOf, runCli, UsageError, type CommandSpec, type Io } from './args.ts';

export const REPLAY_USAGE = `usage: awaken replay FILE… [--format table|pretty|json] [--json]

Replays each transcript and compares the new event stream with the recorded one byte for byte.
--format table (default) lists the files and each divergence; pretty shows where each one left the
recording side by side, the recorded record or event beside what the replay did now (| changed,
< only recorded, > only now); json (also --json) prints the reports.
Exit 0 iff every file replays identically.
`;

const FORMATS: readonly ReportFormat[] = ['table', 'pretty', 'json'];

export const REPLAY_COMMAND: CommandSpec = {
  command: 'replay',
  usage: REPLAY_USAGE,
  options: { json: { type: 'boolean' }, format: { type: 'string' } },
  positionals: { min: 1, max: Infinity, name: 'a transcript FILE' },
};

/** `awaken replay FILE… [--format table|pretty|json]`. */
export async function replayCommand(argv: readonly string[], io: Io): Promise<number> {
  return runCli(REPLAY_COMMAND, argv, io, (args) => {
    const format = choiceOf(args, 'format', FORMATS);
    if (format !== undefined && args.values['json'] === true && format !== 'json') throw new UsageError('--json and --format ' + format + ' say two things: give one');
    return replayFiles(args.positionals, io, args.values['json'] === true ? 'json' : (format ?? 'table'), { width: Math.max(30, Math.floor(((process.stdout.columns ?? 130) - 8) / 2)) });
  });
}
