import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  connectionLost,
  describeCause,
  DriveFailure,
  JUDGED_PROTOCOLS,
  otherProtocolOf,
  reportOf,
  Unreachable,
  unreachableCode,
  renderReport,
  type Capture,
  type Finding,
  type JudgeReport,
  type Scenario,
} from '../protocols/findings.ts';
import { choiceOf, CliFailure, runCli, stringOf, UsageError, type CommandSpec, type Io } from './args.ts';
import { cannotRead } from './cannot-read.ts';
import { JudgeUnavailable, loadJudgeWith } from './conformance-command.ts';
import { EXIT } from './exit.ts';
import { JUDGE_USAGE } from './usages.ts';

export { JUDGE_USAGE };

export const JUDGE_COMMAND: CommandSpec = {
  command: 'judge',
  usage: JUDGE_USAGE,
  options: {
    protocol: { type: 'string' },
    url: { type: 'string' },
    command: { type: 'string' },
    message: { type: 'string' },
    approve: { type: 'boolean' },
    deny: { type: 'boolean' },
    // biome-ignore lint/suspicious/noThenProperty: the --then option (a string of text to send next), never a thenable's method
    then: { type: 'string' },
    token: { type: 'string' },
    tool: { type: 'string' },
    save: { type: 'string' },
    json: { type: 'boolean' },
  },
  positionals: { min: 0, max: Infinity, name: 'a FILE' },
};

const PROTOCOLS = JUDGED_PROTOCOLS;
type Protocol = (typeof PROTOCOLS)[number];

/** Stops a judgement of bodies of another protocol: their findings would say only that (dozens of them). */
function refuseOtherProtocol(bodies: readonly string[], protocol: Protocol, nameOf: (turn: number) => string): void {
  bodies.forEach((body, i) => {
    const other = otherProtocolOf(body, protocol);
    if (other !== undefined) throw new CliFailure(`${nameOf(i)}: this looks like ${other}, not ${protocol}; try --protocol ${other}`, EXIT.usage);
  });
}

interface Judge {
  /** The turns of one conversation, judged; `ids` are the JSON-RPC request ids (mcp, acp). */
  turns(bodies: readonly string[], ids: readonly (number | string)[]): Promise<{ readonly findings: Finding[]; readonly frames: number[] }>;
  drive(s: Scenario & { readonly tool?: string; readonly command?: string }): Promise<Capture>;
}

/** Each protocol's judge and official client, loaded only when the command runs (optional peer dependencies). */
const JUDGES: Readonly<Record<Protocol, () => Promise<Judge>>> = {
  'ai-sdk-v6': async () => {
    const [{ judgeAiSdkTurns }, { driveAiSdk }] = await Promise.all([import('../protocols/ai-sdk-v6/judge.ts'), import('../protocols/ai-sdk-v6/drive.ts')]);
    return { turns: (b) => judgeAiSdkTurns(b), drive: driveAiSdk };
  },
  'ag-ui': async () => {
    const [{ judgeAgUiTurns }, { driveAgUi }] = await Promise.all([import('../protocols/ag-ui/judge.ts'), import('../protocols/ag-ui/drive.ts')]);
    return { turns: (b) => judgeAgUiTurns(b), drive: driveAgUi };
  },
  a2a: async () => {
    const [{ judgeA2aTurns }, { driveA2a }] = await Promise.all([import('../protocols/a2a/judge.ts'), import('../protocols/a2a/drive.ts')]);
    return { turns: (b) => judgeA2aTurns(b), drive: driveA2a };
  },
  mcp: async () => {
    const [{ judgeMcpTurns }, { driveMcp }] = await Promise.all([import('../protocols/mcp/judge.ts'), import('../protocols/mcp/drive.ts')]);
    return { turns: (b, ids) => judgeMcpTurns(b, ids), drive: driveMcp };
  },
  acp: async () => {
    const [{ judgeAcpTurns }, { driveAcp }] = await Promise.all([import('../protocols/acp/judge.ts'), import('../protocols/acp/drive.ts')]);
    return {
      turns: (b, ids) => judgeAcpTurns(b, ids),
      drive: (s) =>
        driveAcp({
          command: s.command ?? '',
          message: s.message,
          ...(s.decision !== undefined ? { decision: s.decision } : {}),
          // biome-ignore lint/suspicious/noThenProperty: ACP's `then` option is the text sent after the first turn, a string, never a thenable's method
          ...(s.then !== undefined ? { then: s.then } : {}),
        }),
    };
  },
};

const loadJudge = (protocol: Protocol): Promise<Judge> => loadJudgeWith(protocol, JUDGES[protocol]);

/** The id of the first response in an NDJSON body (what a captured call or prompt answered), else 1. */
function responseIdOf(body: string): number | string {
  for (const line of body.split('\n')) {
    try {
      const m = JSON.parse(line) as { id?: unknown; method?: unknown } | null;
      if (m !== null && m.method === undefined && (typeof m.id === 'number' || typeof m.id === 'string')) return m.id;
    } catch {
      // not JSON: the judge says so
    }
  }
  return 1;
}

/** `awaken judge`: a capture, or a live conversation, judged by the protocol's official library. */
export async function judgeCommand(argv: readonly string[], io: Io): Promise<number> {
  return runCli(JUDGE_COMMAND, argv, io, async (args) => {
    const protocol = choiceOf(args, 'protocol', PROTOCOLS);
    if (protocol === undefined) throw new UsageError('--protocol is required');
    const url = stringOf(args, 'url');
    const command = stringOf(args, 'command');
    const files = args.positionals;
    const sources = [files.length > 0, url !== undefined, command !== undefined].filter(Boolean).length;
    if (sources !== 1) throw new UsageError('give FILEs, --url or --command (one of them)');
    if (command !== undefined && protocol !== 'acp') throw new UsageError('--command is for acp (an agent over stdio); the other protocols take --url');
    if (url !== undefined && protocol === 'acp') throw new UsageError('acp runs over stdio: start the agent with --command');
    if (args.values['approve'] === true && args.values['deny'] === true) throw new UsageError('--approve and --deny exclude each other');

    // Captured bodies are read, and checked to be of the protocol, before its judge loads.
    const read = files.map((f) => {
      try {
        return readFileSync(f, 'utf8');
      } catch (e) {
        throw cannotRead(f, e);
      }
    });
    refuseOtherProtocol(read, protocol, (i) => files[i] as string);

    let judge: Judge;
    try {
      judge = await loadJudge(protocol);
    } catch (e) {
      if (e instanceof JudgeUnavailable) throw new CliFailure(e.message, EXIT.unavailable);
      throw e;
    }

    let capture: Capture;
    const notes: string[] = [];
    if (files.length > 0) {
      capture = { bodies: read, requestIds: read.map(responseIdOf) };
    } else {
      const token = stringOf(args, 'token');
      const then = stringOf(args, 'then');
      const tool = stringOf(args, 'tool');
      const decision = args.values['approve'] === true ? 'approve' : args.values['deny'] === true ? 'deny' : undefined;
      try {
        capture = await judge.drive({
          url: url ?? '',
          message: stringOf(args, 'message') ?? 'Hello!',
          ...(decision !== undefined ? { decision } : {}),
          ...(then !== undefined ? { then } : {}),
          ...(token !== undefined ? { headers: { authorization: `Bearer ${token}` } } : {}),
          ...(tool !== undefined ? { tool } : {}),
          ...(command !== undefined ? { command } : {}),
        });
      } catch (e) {
        throw driveFailure(e, url ?? command ?? '');
      }
      const save = stringOf(args, 'save');
      if (save !== undefined) {
        mkdirSync(save, { recursive: true });
        const ext = protocol === 'mcp' || protocol === 'acp' ? 'ndjson' : 'sse';
        capture.bodies.forEach((b, i) => {
          writeFileSync(join(save, `turn-${i + 1}.${ext}`), b);
        });
      }
      refuseOtherProtocol(capture.bodies, protocol, (i) => `${url ?? command ?? ''} (turn ${i + 1})`);
      if (decision !== undefined && capture.asked === false) notes.push(`--${decision} went unused: the server asked for no approval in this conversation`);
    }
    const verdict = await judge.turns(capture.bodies, capture.requestIds ?? capture.bodies.map(() => 1));
    const report: JudgeReport = reportOf(protocol, verdict.frames, verdict.findings, notes);
    io.out(args.values['json'] === true ? `${JSON.stringify(report, null, 2)}\n` : renderReport(report));
    return report.passed ? EXIT.ok : EXIT.failed;
  });
}

/** Why a drive stopped, as one line with its exit code: a server that does not answer is unavailable. */
function driveFailure(e: unknown, where: string): CliFailure {
  if (e instanceof CliFailure) return e;
  if (e instanceof Unreachable) return new CliFailure(e.message, EXIT.unavailable);
  const code = unreachableCode(e);
  if (code !== undefined) return new CliFailure(`${where} does not answer (${code})`, EXIT.unavailable);
  if (e instanceof DriveFailure) return new CliFailure(e.message, EXIT.failed);
  // A server that closed the connection went away: unavailable, with the cause the network gave.
  return new CliFailure(`the conversation with ${where} failed: ${describeCause(e)}`, connectionLost(e) ? EXIT.unavailable : EXIT.failed);
}
