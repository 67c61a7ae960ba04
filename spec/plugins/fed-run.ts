import { GEN_AI_PROVIDER_NAME_VALUE_OPENAI } from '@opentelemetry/semantic-conventions/incubating';
import { AgentSpecSchema } from '../../src/contract/agent-spec.ts';
import { TerminationReasons } from '../../src/contract/lifecycle.ts';
import { Messages, type Message } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import type { RunTap, TappedInference } from '../../src/runtime/tap.ts';
import { observabilityPlugin } from '../../src/plugins/observability/plugin.ts';
import type { MetricsSink } from '../../src/plugins/observability/spans.ts';

/** One run fed straight to the observability plugin's tap, shared by the in-memory and the on-the-wire attribute specs. */
export const SYSTEM = 'You plan trips.';
export const TOOLS = [
  { id: 'lookup', name: 'lookup', description: 'Looks a city up', parameters: { type: 'object' } },
  { id: 'book', name: 'book', description: 'Books a room', parameters: { type: 'object' } },
];

/**
 * A run fed straight to the plugin's tap, with everything a provider may say: its name in the
 * conventions, the response's id and model, its server; a failed inference the loop reports with a
 * stop reason all the same; a tool that succeeds and one whose result is an error; a delegated run
 * (a parent) ending with an error. Every attribute of the doc's tables has a reason to be set.
 */
export function fedRun(sink: MetricsSink): void {
  const env = deterministicEnv({ tick: 5 });
  const agent = AgentSpecSchema.parse({ id: 'planner', model: 'main', description: 'Plans trips' });
  const plugin = observabilityPlugin(sink);
  const tap = plugin.tap?.({ env, threadId: 'thread-9', runId: 'run-9', agent, parentRunId: 'run-0' }) as RunTap;
  const messages: Message[] = [Messages.system(SYSTEM), Messages.user('Two nights in Lyon')];
  const base = { provider: 'main-provider', answeredBy: 'gpt-4o', cancelled: false } as const;
  tap.event?.({ event_type: 'run_start', thread_id: 'thread-9', run_id: 'run-9', parent_run_id: 'run-0' });
  const first: TappedInference = {
    ...base,
    request: { model: 'gpt-4o', messages, tools: TOOLS, overrides: { temperature: 0.2, top_p: 0.9, max_tokens: 512 } },
    startedAt: env.clock.now(),
    endedAt: env.clock.now(),
    usage: { prompt_tokens: 40, completion_tokens: 9, total_tokens: 49, cache_read_tokens: 10, cache_creation_tokens: 5, thinking_tokens: 3 },
    stopReason: 'ToolUse',
    providerName: GEN_AI_PROVIDER_NAME_VALUE_OPENAI,
    responseId: 'chatcmpl-1',
    responseModel: 'gpt-4o-2024-08-06',
    server: { address: 'api.openai.com', port: 443 },
    output: {
      text: 'Looking.',
      reasoning: 'Lyon first.',
      toolCalls: [
        { id: 'c1', name: 'lookup', arguments: { city: 'Lyon' } },
        { id: 'c2', name: 'book', arguments: { nights: 2 } },
      ],
    },
  };
  tap.inference?.(first);
  const [lookup, book] = first.output?.toolCalls ?? [];
  if (lookup === undefined || book === undefined) throw new Error('two calls');
  tap.toolStarted?.(lookup);
  tap.toolSettled?.(lookup, ToolResults.success('lookup', { city: 'Lyon' }));
  tap.toolStarted?.(book);
  tap.toolSettled?.(book, ToolResults.error('book', 'no rooms'));
  messages.push(
    { role: 'assistant', content: [{ type: 'text', text: 'Looking.' }], tool_calls: [lookup, book] },
    Messages.tool('c1', '{"city":"Lyon"}'),
    Messages.tool('c2', 'no rooms'),
  );
  // A failed inference: the loop still hands over the stop reason of its empty result.
  tap.inference?.({
    ...base,
    request: { model: 'gpt-4o', messages, tools: TOOLS },
    startedAt: env.clock.now(),
    endedAt: env.clock.now(),
    stopReason: 'EndTurn',
    error: { code: 'rate_limited', message: 'slow down' },
  });
  tap.event?.({ event_type: 'run_finish', thread_id: 'thread-9', run_id: 'run-9', termination: TerminationReasons.error('rate limited') });
}
