import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { deserialiseEvent, type AgentEvent } from '../src/contract/event.ts';
import { Messages } from '../src/contract/message.ts';
import { harness } from '../spec/support/runtime.ts';
import { script, scriptTools } from '../spec/support/scripts.ts';

/** The conformance streams every encoder is judged on, by file name. */
const dir = resolve(import.meta.dirname, 'streams');
export const streams: readonly string[] = readdirSync(dir)
  .filter((f) => f.endsWith('.events.jsonl'))
  .sort();

export const eventsOf = (file: string): AgentEvent[] =>
  readFileSync(join(dir, file), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map(deserialiseEvent);

/** Where a stream's golden output for a protocol lives: SSE bodies `.sse`, JSON-RPC lines `.ndjson`. */
export const goldenPath = (protocol: string, file: string): string =>
  resolve(import.meta.dirname, 'golden', protocol, file.replace('.events.jsonl', protocol === 'mcp' || protocol === 'acp' ? '.ndjson' : '.sse'));

export const goldenOf = (protocol: string, file: string): string => readFileSync(goldenPath(protocol, file), 'utf8');

/** A provider failure, at some step of a script. */
const failure = fc.record({
  at: fc.nat({ max: 6 }),
  error: fc.record({
    code: fc.constantFrom('provider' as const, 'rate_limited' as const, 'timeout' as const),
    message: fc.constantFrom('down', 'slow down', 'no answer'),
  }),
});

/**
 * The events of a random run of the real loop: a random model script in a random tool-execution
 * mode, optionally with a provider failure at some step (ending the run, or tolerated by a
 * consecutive_errors policy), optionally cancelled after some event — a stream that respects every
 * loop invariant.
 */
export const runEvents: fc.Arbitrary<Promise<AgentEvent[]>> = fc
  .tuple(
    script,
    fc.constantFrom('sequential', 'parallel_streaming', 'parallel_batch_approval' as const),
    fc.option(fc.integer({ min: 1, max: 30 }), { nil: undefined }),
    fc.option(failure, { nil: undefined }),
    fc.boolean(),
  )
  .map(async ([script, mode, cancelAt, fails, tolerated]) => {
    const steps = fails === undefined ? script : [...script.slice(0, fails.at), { error: fails.error }, ...script.slice(fails.at)];
    const stops = fails !== undefined && tolerated ? { stop_conditions: [{ type: 'consecutive_errors' as const, max: 2 }] } : {};
    const h = harness(steps, { tools: scriptTools, spec: { max_rounds: 8, sections: { tool_execution: { mode } }, ...stops } });
    const controller = new AbortController();
    const events: AgentEvent[] = [];
    await h.runtime.run(
      { messages: [Messages.user('go')] },
      { emit: (e) => void (events.push(e), events.length === cancelAt && controller.abort()) },
      { signal: controller.signal, waitForDecisions: false },
    );
    return events;
  });
