/**
 * The exit codes of every `awaken` command, one table for all (docs/cli.md; the numbers follow the
 * BSD sysexits convention where one fits).
 */
export const EXIT = {
  /** Done, and what was checked passed. */
  ok: 0,
  /** The command ran, and what it checked failed: a conformance failure, a replay that differs, a run that ended in error. */
  failed: 1,
  /** The command line is wrong: an unknown command or option, a missing or bad value. */
  usage: 64,
  /** An input does not parse: a config file, a script, a transcript, event lines. */
  data: 65,
  /** An input cannot be read: a file that is not there, a directory that does not exist. */
  noInput: 66,
  /** Something the command needs is not there: a store that does not answer, a port in use, an optional package not installed. */
  unavailable: 69,
  /** A bug: please report it. */
  internal: 70,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
