import { readFileSync } from 'node:fs';
import { closest, type Io } from './args.ts';
import { EXIT } from './exit.ts';
import { SERVE_USAGE } from './serve-usage.ts';
import {
  ACP_USAGE,
  BENCH_USAGE,
  CONFORMANCE_USAGE,
  DEV_USAGE,
  ENCODE_USAGE,
  FUZZ_USAGE,
  INSPECT_USAGE,
  JUDGE_USAGE,
  MCP_USAGE,
  RECORD_USAGE,
  REPLAY_USAGE,
  RUN_USAGE,
} from './usages.ts';

const USAGE = `usage: awaken <command>

commands:
  run        run one agent on a scripted or recorded model and print its events
  record     run like \`run\` and write a transcript of every port exchange
  replay     replay transcripts and compare their events byte for byte
  inspect    print a recorded run's timeline: steps, inferences, tool calls, state changes
  encode     turn AgentEvent JSONL into a protocol's wire bytes (ai-sdk-v6, ag-ui, a2a, mcp, acp)
  conformance  encode the conformance streams and let the official library judge them
  judge      judge any server's protocol output (a capture, or a live --url) with the official library
  fuzz       fuzz a plugin and the laws of its state keys
  bench      benchmark an agent with its plugins beside the fair floors
  mcp        serve the agent as an MCP tool over stdio
  acp        serve the agent as an ACP agent over stdio
  serve      run agents over HTTP/SSE with durable storage (SQLite by default)
  dev        serve your app (--app FILE) and load it again whenever you change it
  version    print the version
  help       print this text (awaken help <command>: that command's)

Every command answers --help. Exit codes (docs/cli.md): 0 ok, 1 what was checked failed, 64 a
command-line mistake, 65 an input that does not parse, 66 an input that cannot be read, 69 something
needed is not there (a store, a free port, an optional package), 70 a bug.

${RUN_USAGE}
${RECORD_USAGE}
${REPLAY_USAGE}
${INSPECT_USAGE}
${ENCODE_USAGE}
${CONFORMANCE_USAGE}
${JUDGE_USAGE}
${FUZZ_USAGE}
${BENCH_USAGE}
${MCP_USAGE}
${ACP_USAGE}
${SERVE_USAGE}
${DEV_USAGE}`;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** A terminal's status line on stderr (rewritten in place), when a person watches stdout. */
function statusLine(): ((line: string) => void) | undefined {
  if (process.stdout.isTTY !== true || process.stderr.isTTY !== true) return undefined;
  return (line) => void process.stderr.write(`\r\x1b[2K${line.slice(0, Math.max(10, (process.stderr.columns ?? 80) - 1))}`);
}

const progress = statusLine();
const processIo: Io = {
  out: (t) => void process.stdout.write(t),
  err: (t) => void process.stderr.write(t),
  ...(progress !== undefined ? { progress } : {}),
};

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

type Command = (argv: readonly string[], io: Io, stdin: () => Promise<string>) => Promise<number>;

/**
 * Each command's module is imported when that command runs, not before: they load the runtime, the
 * protocols and the server, which `awaken --version` and `awaken --help` never need (docs/adr/0046).
 */
const COMMANDS: Readonly<Record<string, Command>> = {
  run: async (argv, io) => (await import('./run-command.ts')).runCommand(argv, io),
  record: async (argv, io) => (await import('./record-command.ts')).recordCommand(argv, io),
  replay: async (argv, io) => (await import('./replay-command.ts')).replayCommand(argv, io),
  inspect: async (argv, io) => (await import('./inspect-command.ts')).inspectCommand(argv, io),
  encode: async (argv, io, stdin) => (await import('./encode-command.ts')).encodeCommand(argv, io, stdin),
  conformance: async (argv, io) => (await import('./conformance-command.ts')).conformanceCommand(argv, io),
  judge: async (argv, io) => (await import('./judge-command.ts')).judgeCommand(argv, io),
  fuzz: async (argv, io) => (await import('./fuzz-command.ts')).fuzzCommand(argv, io),
  bench: async (argv, io) => (await import('./bench-command.ts')).benchCommand(argv, io),
  mcp: async (argv, io) => (await import('./mcp-command.ts')).mcpCommand(argv, io, version()),
  acp: async (argv, io) => (await import('./acp-command.ts')).acpCommand(argv, io),
  serve: async (argv, io) => (await import('./serve-command.ts')).serveCommand(argv, io, version()),
  dev: async (argv, io) => (await import('./dev-command.ts')).devCommand(argv, io, version()),
};

/** Entry point of the `awaken` command; returns the exit code (docs/cli.md). */
export async function main(argv: readonly string[], io: Io = processIo, stdin: () => Promise<string> = readStdin): Promise<number> {
  const [command = 'help', ...rest] = argv;
  const run = COMMANDS[command];
  if (run !== undefined) return run(rest, io, stdin);
  switch (command) {
    case 'version':
    case '--version':
    case '-v':
      io.out(`${version()}\n`);
      return EXIT.ok;
    case 'help':
    case '--help':
    case '-h': {
      const topic = rest[0];
      if (topic === undefined) {
        io.out(USAGE);
        return EXIT.ok;
      }
      if (COMMANDS[topic] !== undefined) return (COMMANDS[topic] as Command)(['--help'], io, stdin);
      return unknown(topic, io);
    }
    default:
      return unknown(command, io);
  }
}

function unknown(command: string, io: Io): number {
  const names = [...Object.keys(COMMANDS), 'version', 'help'];
  const guess = closest(command, names);
  io.err(`awaken: unknown command '${command}'${guess !== undefined ? ` (did you mean ${guess}?)` : ''}; commands: ${names.join(', ')}; see awaken help\n`);
  return EXIT.usage;
}

/**
 * The `awaken` process: runs `main` and sets the exit code. A reader that stops reading (`awaken
 * run … | head -1`) ends the command quietly with exit 0; an unexpected error prints its stack once
 * and exits 70 (a bug to report).
 */
export async function cli(argv: readonly string[]): Promise<void> {
  const closed = (e: NodeJS.ErrnoException): void => {
    if (e.code === 'EPIPE') process.exit(EXIT.ok);
    throw e;
  };
  process.stdout.on('error', closed);
  process.stderr.on('error', closed);
  try {
    process.exitCode = await main(argv);
  } catch (e) {
    process.stderr.write(`awaken: internal error (please report it): ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = EXIT.internal;
  }
}
