import { parseArgs } from 'node:util';
import type { BuildError } from '../contract/errors.ts';
import { EXIT } from './exit.ts';

/** One option of a command: a string (repeatable when `multiple`) or a flag. */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly multiple?: boolean;
  readonly short?: string;
}

/** A command's options and positionals, and its usage text (printed by `--help`). */
export interface CommandSpec {
  readonly command: string;
  readonly usage: string;
  readonly options: Readonly<Record<string, OptionSpec>>;
  /** How many positional arguments it takes (none when absent). */
  readonly positionals?: { readonly min: number; readonly max: number; readonly name: string };
}

export interface ParsedArgs {
  readonly values: Readonly<Record<string, string | boolean | string[] | undefined>>;
  readonly positionals: readonly string[];
}

/** A command that cannot go on: one line for the user, and the exit code that says why. */
export class CliFailure extends Error {
  readonly exit: number;
  constructor(message: string, exit: number) {
    super(message);
    this.exit = exit;
  }
}

/** Agents that do not build, as one line naming `where` (the config file) and what is wrong: bad data. */
export function buildFailure(where: string, e: BuildError): CliFailure {
  return new CliFailure(`${where}: ${'message' in e ? e.message : 'id' in e ? `${e.code.replace(/_/g, ' ')}: '${e.id}'` : e.code}`, EXIT.data);
}

/** A mistake on the command line: one line, and the usage exit code. */
export class UsageError extends CliFailure {
  constructor(message: string) {
    super(message, EXIT.usage);
  }
}

/** The closest of `candidates` to `word` (edit distance ≤ 2, or a prefix), for "did you mean". */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: { readonly c: string; readonly d: number } | undefined;
  for (const c of candidates) {
    const d = c.startsWith(word) || word.startsWith(c) ? 1 : distance(word, c);
    if (d <= 2 && (best === undefined || d < best.d)) best = { c, d };
  }
  return best?.c;
}

function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row.push(Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1)));
    prev = row;
  }
  return prev[b.length] as number;
}

/**
 * Parses a command line with `node:util`'s `parseArgs`: `--flag value` and `--flag=value`, `-h` /
 * `--help` on every command (`'help'` comes back), `--` ending the options. A mistake is a
 * `UsageError` with one line: the unknown option with a "did you mean", a missing value, an
 * unexpected or missing positional.
 */
export function parseCommand(spec: CommandSpec, argv: readonly string[]): ParsedArgs | 'help' {
  const options = { ...spec.options, help: { type: 'boolean' as const, short: 'h' } };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: negativeValuesJoined(spec, argv), options, strict: true, allowPositionals: spec.positionals !== undefined });
  } catch (e) {
    throw new UsageError(describe(e, Object.keys(spec.options)));
  }
  if (parsed.values['help'] === true) return 'help';
  const positionals = parsed.positionals;
  const p = spec.positionals;
  if (p !== undefined && positionals.length < p.min) throw new UsageError(`${p.name} is required`);
  if (p !== undefined && positionals.length > p.max) throw new UsageError(`unexpected argument '${positionals[p.max] ?? ''}'`);
  return { values: parsed.values as ParsedArgs['values'], positionals };
}

/**
 * `--seed -42` as `--seed=-42`: `parseArgs` takes a value that starts with `-` for an option of its
 * own, so a negative number after an option that takes a value is joined to it (before `--` only).
 */
function negativeValuesJoined(spec: CommandSpec, argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') return [...out, ...argv.slice(i)];
    const name = /^--([^=]+)$/.exec(arg)?.[1];
    const next = argv[i + 1];
    if (name !== undefined && spec.options[name]?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

function describe(e: unknown, known: readonly string[]): string {
  const message = e instanceof Error ? e.message : String(e);
  const code = (e as { code?: string }).code;
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const option = /'(-{1,2}[^'=]+)/.exec(message)?.[1] ?? message;
    const guess = closest(option.replace(/^-+/, ''), known);
    return `unknown option ${option}${guess !== undefined ? ` (did you mean --${guess}?)` : ''}`;
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const option = /'(-{1,2}[^' ]+)/.exec(message)?.[1];
    return option !== undefined ? `${option.split(' ')[0]} needs a value` : message;
  }
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') return `unexpected argument '${/'([^']*)'/.exec(message)?.[1] ?? ''}'`;
  return message;
}

export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** Where a long command shows how far it is (a terminal's status line); absent when nobody watches. */
  readonly progress?: (line: string) => void;
}

/**
 * Runs a command: `--help` prints its usage (exit 0); a `CliFailure`, thrown while parsing or by
 * the command, prints one line (`awaken <command>: <what>`, for a usage mistake with `; see awaken
 * <command> --help`) and exits with its code.
 */
export async function runCli(spec: CommandSpec, argv: readonly string[], io: Io, body: (args: ParsedArgs) => Promise<number> | number): Promise<number> {
  try {
    const args = parseCommand(spec, argv);
    if (args === 'help') {
      io.out(spec.usage);
      return EXIT.ok;
    }
    return await body(args);
  } catch (e) {
    if (!(e instanceof CliFailure)) throw e;
    io.err(`awaken ${spec.command}: ${e.message}${e instanceof UsageError ? `; see awaken ${spec.command} --help` : ''}\n`);
    return e.exit;
  }
}

/** A string option (the last one given). */
export const stringOf = (args: ParsedArgs, name: string): string | undefined => {
  const v = args.values[name];
  return Array.isArray(v) ? v.at(-1) : typeof v === 'string' ? v : undefined;
};

/** A repeatable string option. */
export const stringsOf = (args: ParsedArgs, name: string): string[] => {
  const v = args.values[name];
  return Array.isArray(v) ? v : typeof v === 'string' ? [v] : [];
};

/** A string option that must be one of `choices`. */
export function choiceOf<T extends string>(args: ParsedArgs, name: string, choices: readonly T[]): T | undefined {
  const v = stringOf(args, name);
  if (v === undefined) return undefined;
  if (!(choices as readonly string[]).includes(v))
    throw new UsageError(`--${name} must be ${choices.length === 2 ? choices.join(' or ') : `one of ${choices.join(', ')}`}, not '${v}'`);
  return v as T;
}
