import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { deserialiseEvent } from '../contract/event.ts';
import { encodeAiSdk, frameAiSdk } from '../protocols/ai-sdk-v6/encoder.ts';
import { judgeAiSdk } from '../protocols/ai-sdk-v6/judge.ts';
import type { Io } from './run-command.ts';

export const CONFORMANCE_USAGE = `usage: awaken conformance [--protocol ai-sdk-v6] [--json]

Encodes every stream of conformance/streams/ and has the protocol's official library judge it.
Exit 1 on an unexpected failure, or when an expected failure starts passing.
`;

const root = fileURLToPath(new URL('../../conformance/', import.meta.url));

interface CaseResult {
  readonly protocol: string;
  readonly stream: string;
  readonly passed: boolean;
  readonly problems: readonly string[];
}

/** Runs the suite: today the AI SDK v6 judge (the other protocols arrive with their encoders). */
export async function conformanceCommand(argv: readonly string[], io: Io): Promise<number> {
  const at = argv.indexOf('--protocol');
  const protocol = at >= 0 ? argv[at + 1] : 'ai-sdk-v6';
  if (protocol !== 'ai-sdk-v6') {
    io.err(`awaken conformance: ${protocol === undefined ? '--protocol needs a value' : `the ${protocol} suite is not available yet (ai-sdk-v6 is)`}\n${CONFORMANCE_USAGE}`);
    return 2;
  }
  const expected = new Set((JSON.parse(readFileSync(join(root, 'expected-failures.json'), 'utf8')) as { entries: { id: string }[] }).entries.map((e) => e.id));
  const streams = readdirSync(join(root, 'streams')).filter((f) => f.endsWith('.events.jsonl')).sort();
  const results: CaseResult[] = [];
  for (const stream of streams) {
    const events = readFileSync(join(root, 'streams', stream), 'utf8').split('\n').filter((l) => l !== '').map(deserialiseEvent);
    const v = await judgeAiSdk(frameAiSdk(encodeAiSdk(events)));
    const last = events.at(-1);
    const problems = [...v.problems, ...(v.streamError !== undefined && last?.event_type !== 'error' ? [`stream error: ${v.streamError}`] : [])];
    results.push({ protocol, stream, passed: problems.length === 0, problems });
  }
  const unexpected = results.filter((r) => r.passed === expected.has(`${r.protocol}/${r.stream}`));
  if (argv.includes('--json')) io.out(`${JSON.stringify({ results, unexpected: unexpected.map((r) => `${r.protocol}/${r.stream}`) }, null, 2)}\n`);
  else {
    const passed = results.filter((r) => r.passed).length;
    io.out(`protocol   passed  failed  expected-failures\n${protocol.padEnd(9)}  ${String(passed).padStart(6)}  ${String(results.length - passed).padStart(6)}  ${String(expected.size).padStart(17)}\n`);
    for (const r of unexpected) io.out(`\nunexpected ${r.passed ? 'pass' : 'failure'}: ${r.protocol}/${r.stream}\n${r.problems.map((p) => `  ${p}`).join('\n')}\n`);
  }
  return unexpected.length === 0 ? 0 : 1;
}
