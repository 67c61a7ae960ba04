import { readFileSync } from 'node:fs';
import { acpCommand, ACP_USAGE } from './acp-command.ts';
import { conformanceCommand, CONFORMANCE_USAGE } from './conformance-command.ts';
import { encodeCommand, ENCODE_USAGE } from './encode-command.ts';
import { mcpCommand, MCP_USAGE } from './mcp-command.ts';
import { recordCommand, RECORD_USAGE } from './record-command.ts';
import { replayCommand, REPLAY_USAGE } from './replay-command.ts';
import { runCommand, RUN_USAGE, type Io } from './run-command.ts';
import { serveCommand, SERVE_USAGE } from './serve-command.ts';

const USAGE = `usage: awaken <command>

commands:
  run        run one agent on a scripted or recorded model and print its events
  record     run like \`run\` and write a transcript of every port exchange
  replay     replay transcripts and compare their events byte for byte
  encode     turn AgentEvent JSONL into a protocol's wire bytes (ai-sdk-v6, ag-ui, a2a, mcp, acp)
  conformance  encode the conformance streams and let the official library judge them
  mcp        serve the agent as an MCP tool over stdio
  acp        serve the agent as an ACP agent over stdio
  serve      run agents over HTTP/SSE with durable storage (SQLite by default)
  version    print the version
  help       print this text

${RUN_USAGE}
${RECORD_USAGE}
${REPLAY_USAGE}
${ENCODE_USAGE}
${CONFORMANCE_USAGE}
${MCP_USAGE}
${ACP_USAGE}
${SERVE_USAGE}`;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

const processIo: Io = { out: (t) => void process.stdout.write(t), err: (t) => void process.stderr.write(t) };

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Entry point of the `awaken` command; returns the exit code. */
export async function main(argv: readonly string[], io: Io = processIo, stdin: () => Promise<string> = readStdin): Promise<number> {
  const [command = 'help', ...rest] = argv;
  switch (command) {
    case 'run':
      return runCommand(rest, io);
    case 'record':
      return recordCommand(rest, io, version());
    case 'replay':
      return replayCommand(rest, io);
    case 'encode':
      return encodeCommand(rest, io, stdin);
    case 'conformance':
      return conformanceCommand(rest, io);
    case 'mcp':
      return mcpCommand(rest, io, version());
    case 'acp':
      return acpCommand(rest, io);
    case 'serve':
      return serveCommand(rest, io, version());
    case 'version':
    case '--version':
      io.out(`${version()}\n`);
      return 0;
    case 'help':
    case '--help':
      io.out(USAGE);
      return 0;
    default:
      io.err(`awaken: unknown command '${command}'\n${USAGE}`);
      return 64;
  }
}
