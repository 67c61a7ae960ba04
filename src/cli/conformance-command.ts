import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { deserialiseEvent, type AgentEvent } from '../contract/event.ts';
import { choiceOf, runCli, type CommandSpec, type Io } from './args.ts';
import { ENCODERS } from './encode-command.ts';
import { EXIT } from './exit.ts';
import { CONFORMANCE_USAGE } from './usages.ts';

export { CONFORMANCE_USAGE };

const root = fileURLToPath(new URL('../../conformance/', import.meta.url));

interface CaseResult {
  readonly protocol: string;
  readonly stream: string;
  readonly passed: boolean;
  readonly problems: readonly string[];
}

type Judge = (events: readonly AgentEvent[], body: string) => Promise<string[]>;

/** The packages each judge needs (optional peer dependencies of the package), as `npm install` takes them. */
export const JUDGE_PACKAGES: Readonly<Record<string, readonly string[]>> = {
  'ai-sdk-v6': ['ai@6'],
  'ag-ui': ['@ag-ui/client@1', '@ag-ui/core@1', 'rxjs@7'],
  a2a: ['@a2a-js/sdk@1'],
  mcp: ['@modelcontextprotocol/sdk@1'],
  acp: ['@agentclientprotocol/sdk@2', 'ajv@8'],
};

/** A judge whose library is not installed: what to install instead of a stack trace. */
export class JudgeUnavailable extends Error {}

/**
 * The judges, loaded on demand: they are the official protocol libraries (optional peer
 * dependencies), which the runtime itself never needs; a missing one is a `JudgeUnavailable`
 * naming what to install. A stream that ends in `error` (an error event, or a run that failed)
 * must end in the protocol's error.
 */
const JUDGES: Readonly<Record<string, () => Promise<Judge>>> = {
  'ai-sdk-v6': async () => {
    const { judgeAiSdk } = await import('../protocols/ai-sdk-v6/judge.ts');
    return async (events, body) => {
      const v = await judgeAiSdk(body);
      const last = events.at(-1);
      const failed = last?.event_type === 'error' || (last?.event_type === 'run_finish' && last.termination.type === 'error');
      return [...v.problems, ...(v.streamError !== undefined && !failed ? [`stream error: ${v.streamError}`] : [])];
    };
  },
  'ag-ui': async () => {
    const { judgeAgUi } = await import('../protocols/ag-ui/judge.ts');
    return async (_events, body) => (await judgeAgUi(body)).problems;
  },
  a2a: async () => {
    const { judgeA2a } = await import('../protocols/a2a/judge.ts');
    return async (_events, body) => (await judgeA2a(body)).problems;
  },
  mcp: async () => {
    const { judgeMcp } = await import('../protocols/mcp/judge.ts');
    return async (_events, body) => (await judgeMcp(body)).problems;
  },
  acp: async () => {
    const { judgeAcp } = await import('../protocols/acp/judge.ts');
    return async (_events, body) => (await judgeAcp(body)).problems;
  },
};

/** A judge, or `JudgeUnavailable` when its library is missing. */
const loadJudge = (protocol: string): Promise<Judge> => loadJudgeWith(protocol, JUDGES[protocol] as () => Promise<Judge>);

/** Loads a protocol's judge; a missing optional library is a `JudgeUnavailable` naming the packages to install. */
export async function loadJudgeWith<J>(protocol: string, load: () => Promise<J>): Promise<J> {
  try {
    return await load();
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw e;
    const packages = JUDGE_PACKAGES[protocol] ?? [];
    throw new JudgeUnavailable(
      `the ${protocol} judge needs ${packages.join(', ')} (optional peer dependencies of awaken-ts): npm install ${packages.join(' ')}`,
    );
  }
}

export const CONFORMANCE_COMMAND: CommandSpec = {
  command: 'conformance',
  usage: CONFORMANCE_USAGE,
  options: { protocol: { type: 'string' }, json: { type: 'boolean' } },
};

/** Runs the suite: every stream through every available encoder and its official judge. */
export async function conformanceCommand(argv: readonly string[], io: Io, options: { readonly expectedFailures?: readonly string[] } = {}): Promise<number> {
  return runCli(CONFORMANCE_COMMAND, argv, io, async (args) => {
    const chosen = choiceOf(args, 'protocol', Object.keys(JUDGES));
    return judgeAll(chosen !== undefined ? [chosen] : Object.keys(JUDGES), args.values['json'] === true, io, options);
  });
}

async function judgeAll(protocols: readonly string[], json: boolean, io: Io, options: { readonly expectedFailures?: readonly string[] }): Promise<number> {
  const expected = new Set(
    options.expectedFailures ??
      (JSON.parse(readFileSync(join(root, 'expected-failures.json'), 'utf8')) as { entries: { id: string }[] }).entries.map((e) => e.id),
  );
  // Each stream is read once and judged by every protocol.
  const streams = readdirSync(join(root, 'streams'))
    .filter((f) => f.endsWith('.events.jsonl'))
    .sort()
    .map((name) => ({
      name,
      events: readFileSync(join(root, 'streams', name), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map(deserialiseEvent),
    }));
  const results: CaseResult[] = [];
  for (const protocol of protocols) {
    let judge: Judge;
    try {
      judge = await loadJudge(protocol);
    } catch (e) {
      if (!(e instanceof JudgeUnavailable)) throw e;
      io.err(`awaken conformance: ${e.message}\n`);
      return EXIT.unavailable;
    }
    const encode = ENCODERS[protocol] as (events: readonly AgentEvent[]) => string;
    for (const [i, { name: stream, events }] of streams.entries()) {
      io.progress?.(`judging ${protocol} ${i + 1}/${streams.length} ${stream}`);
      const problems = await judge(events, encode(events));
      results.push({ protocol, stream, passed: problems.length === 0, problems });
    }
    if (io.progress === undefined) io.err(`judged ${protocol}: ${streams.length} streams\n`);
  }
  io.progress?.('');
  const unexpected = results.filter((r) => r.passed === expected.has(`${r.protocol}/${r.stream}`));
  if (json) io.out(`${JSON.stringify({ results, unexpected: unexpected.map((r) => `${r.protocol}/${r.stream}`) }, null, 2)}\n`);
  else {
    io.out('protocol   passed  failed  expected-failures\n');
    for (const protocol of protocols) {
      const mine = results.filter((r) => r.protocol === protocol);
      const passed = mine.filter((r) => r.passed).length;
      const xfail = [...expected].filter((id) => id.startsWith(`${protocol}/`)).length;
      io.out(`${protocol.padEnd(9)}  ${String(passed).padStart(6)}  ${String(mine.length - passed).padStart(6)}  ${String(xfail).padStart(17)}\n`);
    }
    for (const r of unexpected)
      io.out(`\nunexpected ${r.passed ? 'pass' : 'failure'}: ${r.protocol}/${r.stream}\n${r.problems.map((p) => `  ${p}`).join('\n')}\n`);
  }
  return unexpected.length === 0 ? EXIT.ok : EXIT.failed;
}
