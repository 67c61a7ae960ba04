import { z } from 'zod';
import type * as Root from '../src/index.ts';
import type * as Testing from '../src/testing/index.ts';

/** What an echo run is recorded with: the built package (`echo-record.ts` for `npm run bench`, and `bench:replay-scaling`). */
export type EchoRunLib = Pick<typeof Root, 'defineTool' | 'deterministicEnv' | 'Messages' | 'ToolResults'> & Pick<typeof Testing, 'recordRun' | 'ScriptedLlm'>;

/** A run of `steps` steps, each an echo tool call, then a text answer, recorded. */
export async function echoTranscript(lib: EchoRunLib, steps: number): Promise<string> {
  const echo = lib.defineTool({
    id: 'echo',
    description: 'echo',
    args: z.object({ text: z.string() }),
    execute: ({ text }) => lib.ToolResults.success('echo', { echoed: text }),
  });
  const script = [
    ...Array.from({ length: steps }, (_, i) => ({ tool_calls: [{ id: `c${i}`, name: 'echo', arguments: { text: `t${i}` } }] })),
    { text: 'done' },
  ];
  const { transcript } = await lib.recordRun({
    agent: { id: 'a', model: 'm', system_prompt: 'be brief', max_rounds: steps + 2 },
    models: { m: { provider: 'p', model_name: 'pm' } },
    providers: { p: new lib.ScriptedLlm(script, { record: false }) },
    tools: [echo],
    env: { env: lib.deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, seed: 0, tick: 0 } },
    request: { messages: [lib.Messages.user('go')] },
  });
  return transcript;
}
