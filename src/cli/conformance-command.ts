import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { deserialiseEvent, type AgentEvent } from '../contract/event.ts';
import type { Io } from './run-command.ts';
import { ENCODERS } from './encode-command.ts';

export const CONFORMANCE_USAGE = `usage: awaken conformance [--protocol ai-sdk-v6|ag-ui|a2a|mcp|acp] [--json]

Encodes every stream of conformance/streams/ and has each protocol's official library judge it
(all available protocols unless --protocol names one).
Exit 1 on an unexpected failure, or when an expected failure starts passing.
`;

const root = fileURLToPath(new URL('../../conformance/', import.meta.url));

interface CaseResult {
  readonly protocol: string;
  readonly stream: string;
  readonly passed: boolean;
  readonly problems: readonly string[];
}

type Judge = (events: readonly AgentEvent[], body: string) => Promise<string[]>;

/**
 * The judges, loaded on demand: they are the official protocol libraries (devDependencies), which
 * the runtime itself never needs. A stream that ends in `error` (an error event, or a run that
 * failed) must end in the protocol's error.
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

/** Runs the suite: every stream through every available encoder and its official judge. */
export async function conformanceCommand(
  argv: readonly string[],
  io: Io,
  options: { readonly expectedFailures?: readonly string[] } = {},
): Promise<number> {
  const at = argv.indexOf('--protocol');
  const chosen = at >= 0 ? argv[at + 1] : undefined;
  if (at >= 0 && (chosen === undefined || JUDGES[chosen] === undefined)) {
    io.err(`awaken conformance: ${chosen === undefined ? '--protocol needs a value' : `--protocol must be one of ${Object.keys(JUDGES).join(', ')}`}\n${CONFORMANCE_USAGE}`);
    return 2;
  }
  const protocols = chosen !== undefined ? [chosen] : Object.keys(JUDGES);
  const expected = new Set(
    options.expectedFailures ?? (JSON.parse(readFileSync(join(root, 'expected-failures.json'), 'utf8')) as { entries: { id: string }[] }).entries.map((e) => e.id),
  );
  // Each stream is read once and judged by every protocol.
  const streams = readdirSync(join(root, 'streams'))
    .filter((f) => f.endsWith('.events.jsonl'))
    .sort()
    .map((name) => ({ name, events: readFileSync(join(root, 'streams', name), 'utf8').split('\n').filter((l) => l !== '').map(deserialiseEvent) }));
  const results: CaseResult[] = [];
  for (const protocol of protocols) {
    const judge = await (JUDGES[protocol] as () => Promise<Judge>)();
    const encode = ENCODERS[protocol] as (events: readonly AgentEvent[]) => string;
    for (const { name: stream, events } of streams) {
      const problems = await judge(events, encode(events));
      results.push({ protocol, stream, passed: problems.length === 0, problems });
    }
  }
  const unexpected = results.filter((r) => r.passed === expected.has(`${r.protocol}/${r.stream}`));
  if (argv.includes('--json')) io.out(`${JSON.stringify({ results, unexpected: unexpected.map((r) => `${r.protocol}/${r.stream}`) }, null, 2)}\n`);
  else {
    io.out('protocol   passed  failed  expected-failures\n');
    for (const protocol of protocols) {
      const mine = results.filter((r) => r.protocol === protocol);
      const passed = mine.filter((r) => r.passed).length;
      const xfail = [...expected].filter((id) => id.startsWith(`${protocol}/`)).length;
      io.out(`${protocol.padEnd(9)}  ${String(passed).padStart(6)}  ${String(mine.length - passed).padStart(6)}  ${String(xfail).padStart(17)}\n`);
    }
    for (const r of unexpected) io.out(`\nunexpected ${r.passed ? 'pass' : 'failure'}: ${r.protocol}/${r.stream}\n${r.problems.map((p) => `  ${p}`).join('\n')}\n`);
  }
  return unexpected.length === 0 ? 0 : 1;
}
