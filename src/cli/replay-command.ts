import { replayFiles } from '../replay/report.ts';
import { runCli, type CommandSpec, type Io } from './args.ts';

export const REPLAY_USAGE = `usage: awaken replay FILE… [--json]

Replays each transcript and compares the new event stream with the recorded one byte for byte.
Exit 0 iff every file replays identically.
`;

export const REPLAY_COMMAND: CommandSpec = { command: 'replay', usage: REPLAY_USAGE, options: { json: { type: 'boolean' } }, positionals: { min: 1, max: Infinity, name: 'a transcript FILE' } };

/** `awaken replay FILE… [--json]`. */
export async function replayCommand(argv: readonly string[], io: Io): Promise<number> {
  return runCli(REPLAY_COMMAND, argv, io, (args) => replayFiles(args.positionals, io, args.values['json'] === true));
}
