import { replayFiles } from '../replay/report.ts';
import type { Io } from './run-command.ts';

export const REPLAY_USAGE = `usage: awaken replay FILE… [--json]

Replays each transcript and compares the new event stream with the recorded one byte for byte.
Exit 0 iff every file replays identically.
`;

/** `awaken replay FILE… [--json]`. */
export async function replayCommand(argv: readonly string[], io: Io): Promise<number> {
  const json = argv.includes('--json');
  const files = argv.filter((a) => a !== '--json');
  if (files.length === 0 || files.some((f) => f.startsWith('--'))) {
    io.err(`awaken replay: ${files.length === 0 ? 'at least one FILE is required' : `unknown option ${files.find((f) => f.startsWith('--'))}`}\n${REPLAY_USAGE}`);
    return 64;
  }
  return replayFiles(files, io, json);
}
