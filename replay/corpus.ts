import { z } from 'zod';
import type { AgentSpecInput } from '../src/contract/agent-spec.ts';
import { Messages, type Message } from '../src/contract/message.ts';
import { ToolResults, type ToolDescriptor } from '../src/contract/tool.ts';
import { ScriptedLlm, type ScriptStep } from '../src/providers/scripted.ts';
import { recordRun, type Recording, type RecordingSetup } from '../src/replay/recorder.ts';
import { AgentRuntimeBuilder } from '../src/runtime/agent-runtime.ts';
import { createHttpApp } from '../src/server/http.ts';
import { listen } from '../src/server/node.ts';
import { RunRegistry } from '../src/server/run-registry.ts';
import { MemoryStore } from '../src/stores/memory.ts';
import { deterministicEnv, withIdPrefix } from '../src/runtime/env.ts';
import type { Decision } from '../src/runtime/run-loop.ts';
import { defineTool, ToolFailure, type Tool } from '../src/runtime/tool.ts';
import { StateCommand } from '../src/core/state/state-command.ts';
import { HandoffState, requestHandoff } from '../src/plugins/handoff.ts';
import { decodeAgUiInput } from '../src/protocols/ag-ui/request.ts';

/** The tools of the corpus: one per kind of outcome. */
export const CORPUS_TOOLS: readonly Tool[] = [
  defineTool({
    id: 'echo',
    description: 'Echo the text back',
    args: z.object({ text: z.string() }),
    execute: ({ text }) => ToolResults.success('echo', { echoed: text }),
  }),
  defineTool({
    id: 'fail',
    description: 'Returns a tool error result',
    args: z.object({}),
    execute: () => ToolResults.error('fail', 'the tool reported a failure'),
  }),
  defineTool({
    id: 'explode',
    description: 'Throws a ToolError',
    args: z.object({}),
    execute: () => {
      throw new ToolFailure({ code: 'execution_failed', message: 'the tool threw' });
    },
  }),
  defineTool({
    id: 'report',
    description: 'Reports activity, progress and streamed output',
    args: z.object({ steps: z.number().int() }),
    execute: async ({ steps }, ctx) => {
      await ctx.reportActivity('log', 'starting');
      for (let i = 1; i <= steps; i++) {
        await ctx.reportProgress('running', `step ${i}`, i / steps);
        await ctx.streamOutput(`chunk ${i}\n`);
      }
      await ctx.reportActivityDelta('log', { op: 'add', path: '/done', value: true });
      return ToolResults.success('report', { steps });
    },
  }),
  defineTool({
    id: 'confirm',
    description: 'Suspends until a decision arrives',
    args: z.object({ action: z.string() }).loose(),
    execute: (args, ctx) => {
      if (ctx.resume !== undefined) return ToolResults.success('confirm', { done: args.action, decision: ctx.resume.decision.result ?? null });
      const mode = (args['mode'] as 'replay_tool_call' | 'use_decision_as_tool_result' | 'pass_decision_to_tool' | undefined) ?? 'replay_tool_call';
      return ToolResults.suspended('confirm', `confirm ${args.action}?`, {
        suspension: { id: `confirm-${ctx.callId}`, action: 'confirm', message: `Confirm ${args.action}?` },
        pending: { id: ctx.callId, name: 'confirm', arguments: args as never },
        resume_mode: mode,
      });
    },
  }),
];

/** A tool with a large schema (deferring it saves tokens), for the deferred-tools scenario. */
const forecastTool = defineTool({
  id: 'forecast',
  description: 'Weather forecast for a city',
  args: z.object(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`option_${i}`, z.string().optional().describe(`Forecast option number ${i}`)]))),
  execute: () => ToolResults.success('forecast', { sky: 'clear' }),
});

/** A long conversation to truncate or compact: alternating user and assistant turns. */
const longConversation = (turns: number): Message[] =>
  Array.from({ length: turns }, (_, i) =>
    i % 2 === 0
      ? Messages.user(`question ${i}: ${'tell me more about the corpus '.repeat(12)}`)
      : Messages.assistant(`answer ${i}: ${'the corpus holds recorded runs '.repeat(12)}`),
  );

const call = (id: string, name: string, args: Record<string, unknown> = {}) => ({ id, name, arguments: args as never });
const approve =
  (result: unknown = { approved: true }) =>
  (ids: readonly string[]): Decision[] =>
    ids.map((id) => ({
      targetId: id,
      decision: { decision_id: `d-${id}`, action: 'resume' as const, result: result as never, updated_at: 1_700_000_000_000 },
    }));
const deny = (ids: readonly string[]): Decision[] =>
  ids.map((id) => ({ targetId: id, decision: { decision_id: `d-${id}`, action: 'cancel' as const, reason: 'denied', updated_at: 1_700_000_000_000 } }));

interface Scenario {
  readonly name: string;
  readonly script: readonly ScriptStep[];
  readonly agent?: Partial<AgentSpecInput>;
  readonly fallbackScript?: readonly ScriptStep[];
  readonly extra?: Partial<RecordingSetup>;
  readonly tick?: number;
  /** A remote agent's script: the run delegates to it over A2A, on an awaken server started for the recording (replays need none). */
  readonly remote?: readonly ScriptStep[];
  /**
   * A run before this one on thread `threadId`, on the same setup: recorded first and not kept. The
   * thread it leaves is this run's history (loaded from a store) and `next` makes this run's
   * messages. Its ids are drawn with the prefix `earlier-`, so that this run's deterministic
   * environment, which starts its counters again, gives no id the history holds.
   */
  readonly earlier?: { readonly threadId: string; readonly script: readonly ScriptStep[]; readonly next: (threadId: string) => readonly Message[] };
}

const base = (s: Scenario): RecordingSetup => {
  const models: Record<string, { provider: string; model_name: string }> = { main: { provider: 'scripted', model_name: 'scripted-main' } };
  const providers: RecordingSetup['providers'] = { scripted: new ScriptedLlm(s.script) };
  if (s.fallbackScript !== undefined) {
    models['spare'] = { provider: 'spare', model_name: 'scripted-spare' };
    (providers as Record<string, ScriptedLlm>)['spare'] = new ScriptedLlm(s.fallbackScript);
  }
  const tick = s.tick ?? 0;
  return {
    agent: { id: 'corpus', model: 'main', system_prompt: 'You are the corpus agent.', ...s.agent },
    models,
    providers,
    tools: CORPUS_TOOLS,
    env: { env: deterministicEnv({ tick }), header: { kind: 'deterministic', start: 1_700_000_000_000, seed: 42, tick } },
    request: { messages: [Messages.user(`scenario: ${s.name}`)] },
    ...s.extra,
  };
};

/** Read and Write (stateless: Read finds every file empty), for the state-machine scenarios. */
const fileTools: readonly Tool[] = [
  defineTool({
    id: 'Read',
    description: 'Read a file',
    args: z.object({ file_path: z.string() }),
    execute: ({ file_path }) => ToolResults.success('Read', { file_path, content: '' }),
  }),
  defineTool({
    id: 'Write',
    description: 'Write a file',
    args: z.object({ file_path: z.string(), content: z.string() }),
    execute: ({ file_path, content }) => ToolResults.success('Write', { file_path, bytes: content.length }),
  }),
];

/** A tool the client runs (AG-UI `tools`), for the client-tool scenario: the run offers it, a call to it parks the run for the client's result. */
const pickColor: ToolDescriptor = {
  id: 'pick_color',
  name: 'pick_color',
  description: 'Asks the user to pick a colour in the page',
  parameters: { type: 'object', properties: { palette: { type: 'string' } }, required: ['palette'] },
};

/** The order form of the A2UI v0.9 scenario: its Button's action is an event, which the client sends back when clicked. */
const orderForm = {
  messages: [
    {
      version: 'v0.9',
      updateComponents: {
        surfaceId: 'order-form-1',
        components: [
          { id: 'root', component: 'Card', child: 'content' },
          { id: 'content', component: 'Column', children: ['title', 'name', 'submit'] },
          { id: 'title', component: 'Text', variant: 'h2', text: 'Order form' },
          { id: 'name', component: 'TextField', label: 'Name', value: { path: '/order/name' } },
          { id: 'submit_label', component: 'Text', text: 'Place the order' },
          {
            id: 'submit',
            component: 'Button',
            child: 'submit_label',
            variant: 'primary',
            action: { event: { name: 'order.submit', context: { name: { path: '/order/name' } } } },
          },
        ],
      },
    },
    { version: 'v0.9', updateDataModel: { surfaceId: 'order-form-1', path: '/', value: { order: { name: 'Ada Lovelace' } } } },
  ],
};

/** The surface the model answers the click with: the form replaced by what was ordered. */
const orderPlaced = {
  messages: [
    {
      version: 'v0.9',
      updateComponents: {
        surfaceId: 'order-form-1',
        components: [
          { id: 'root', component: 'Card', child: 'done' },
          { id: 'done', component: 'Text', text: 'Order placed for Ada Lovelace.' },
        ],
      },
    },
  ],
};

/**
 * The click on the form's Button as an AG-UI client sends it on the thread's next run
 * (`forwardedProps.a2uiAction.userAction`, as CopilotKit's renderer forwards it), made into the
 * run's message by the AG-UI decoder itself: the message and id a served run gets.
 */
const clickOnSubmit = (threadId: string): Message[] => {
  const userAction = { name: 'order.submit', surfaceId: 'order-form-1', sourceComponentId: 'submit', context: { name: 'Ada Lovelace' } };
  const decoded = decodeAgUiInput({ threadId, runId: 'client-run-2', messages: [], forwardedProps: { a2uiAction: { userAction } } }, 0);
  if (!decoded.ok) throw new Error(`the AG-UI decoder refused the click: ${JSON.stringify(decoded.error)}`);
  return decoded.value.messages.map((m) => (m.id === undefined ? m.message : { ...m.message, id: m.id }));
};

/** The delegate of the delegation scenarios: it answers on the spare model. */
const RESEARCHER: AgentSpecInput = { id: 'researcher', model: 'spare', system_prompt: 'You research sources.', allowed_tools: ['echo', 'confirm'] };

/** Hands the conversation to another agent (the handoff scenario). */
const handTo = defineTool({
  id: 'hand_to',
  description: 'Hand the conversation to another agent',
  args: z.object({ agent: z.string() }),
  execute: ({ agent }) => ({ result: ToolResults.success('hand_to', { agent }), command: StateCommand.empty().update(HandoffState, requestHandoff(agent)) }),
});

/** The read-before-write machine of seed 004 (docs/plugins/state-machine.md), with a given guard. */
const readBeforeWrite = (maxContinuations: number) => ({
  machines: [
    {
      name: 'read-before-write',
      key: '{file_path}',
      key_normalizer: 'path',
      initial: 'unread',
      terminal: ['written'],
      transitions: [
        { on: 'Read(file_path ~ "*")', from: ['unread', 'read', 'written'], to: 'read' },
        {
          on: 'Write(file_path ~ "*")',
          from: 'read',
          to: 'written',
          when: { status: 'success' },
          emit: { target: 'system', content: 'Wrote {file_path}', cooldown_turns: 2 },
          on_violation: { action: 'deny', reason: 'Read {file_path} before writing.' },
        },
      ],
    },
  ],
  continuation: { max_continuations: maxContinuations, message: 'Finish the protocol work: {summary}' },
});

const twoEchoes = [{ tool_calls: [call('c1', 'echo', { text: 'a' }), call('c2', 'echo', { text: 'b' })] }, { text: 'both echoed' }];
const loopStep = (i: number): ScriptStep => ({
  text: 'thinking…',
  tool_calls: [call(`c${i}`, 'echo', { text: `${i}` })],
  usage: { prompt_tokens: 40, completion_tokens: 10 },
});

/** Every scenario of `fixtures/runs/`, by file name. */
export const SCENARIOS: readonly Scenario[] = [
  { name: 'plain-answer', script: [{ text: ['Hello', ', world.'], usage: { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 } }] },
  { name: 'reasoning', script: [{ reasoning: ['Let me think. ', 'Two plus two.'], encrypted_reasoning: 'opaque-signature', text: 'It is 4.' }] },
  { name: 'one-tool', script: [{ tool_calls: [call('c1', 'echo', { text: 'ping' })] }, { text: 'The echo said ping.' }] },
  { name: 'parallel-tools-sequential', script: twoEchoes },
  { name: 'parallel-tools-parallel-streaming', script: twoEchoes, agent: { sections: { tool_execution: { mode: 'parallel_streaming' } } } },
  { name: 'parallel-tools-parallel-batch-approval', script: twoEchoes, agent: { sections: { tool_execution: { mode: 'parallel_batch_approval' } } } },
  { name: 'tool-result-error', script: [{ tool_calls: [call('c1', 'fail')] }, { text: 'The tool failed.' }] },
  { name: 'tool-error-thrown', script: [{ tool_calls: [call('c1', 'explode')] }, { text: 'The tool threw.' }] },
  { name: 'tool-invalid-arguments', script: [{ tool_calls: [call('c1', 'echo', { text: 42 })] }, { text: 'Bad arguments.' }] },
  { name: 'tool-activity-and-stream-output', script: [{ tool_calls: [call('c1', 'report', { steps: 2 })] }, { text: 'Reported.' }] },
  {
    name: 'suspension-resumed-replay-tool-call',
    script: [{ tool_calls: [call('c1', 'confirm', { action: 'deploy', mode: 'replay_tool_call' })] }, { text: 'Deployed.' }],
    extra: { decide: approve() },
  },
  {
    name: 'suspension-resumed-use-decision-as-tool-result',
    script: [{ tool_calls: [call('c1', 'confirm', { action: 'deploy', mode: 'use_decision_as_tool_result' })] }, { text: 'Used the decision.' }],
    extra: { decide: approve({ answer: 'from the user' }) },
  },
  {
    name: 'suspension-resumed-pass-decision-to-tool',
    script: [{ tool_calls: [call('c1', 'confirm', { action: 'deploy', mode: 'pass_decision_to_tool' })] }, { text: 'Passed the decision.' }],
    extra: { decide: approve({ action: 'deploy to staging' }) },
  },
  {
    name: 'suspension-cancelled-by-decision',
    script: [{ tool_calls: [call('c1', 'confirm', { action: 'delete' })] }, { text: 'Not deleted.' }],
    extra: { decide: deny },
  },
  { name: 'suspension-left-waiting', script: [{ tool_calls: [call('c1', 'confirm', { action: 'delete' })] }] },
  { name: 'cancellation-mid-stream', script: [{ text: ['partial ', 'answer ', 'never finished'] }], extra: { cancelAfterEvent: 3 } },
  { name: 'cancellation-before-first-step', script: [{ text: 'never' }], extra: { cancelAfterEvent: 1 } },
  { name: 'stop-max-rounds', script: [loopStep(1), loopStep(2), loopStep(3)], agent: { max_rounds: 2 } },
  { name: 'stop-token-budget', script: [loopStep(1), loopStep(2), loopStep(3)], agent: { stop_conditions: [{ type: 'token_budget', max_total: 80 }] } },
  {
    name: 'stop-timeout',
    script: [loopStep(1), loopStep(2), loopStep(3), loopStep(4)],
    agent: { stop_conditions: [{ type: 'timeout', seconds: 10 }] },
    tick: 1000,
  },
  {
    name: 'stop-consecutive-errors',
    script: [{ error: 'overloaded' }, { error: { code: 'rate_limited', message: 'slow down' } }, { error: 'overloaded' }],
    agent: { stop_conditions: [{ type: 'consecutive_errors', max: 3 }] },
  },
  { name: 'stop-on-tool', script: [{ tool_calls: [call('c1', 'explode')] }], agent: { stop_conditions: [{ type: 'stop_on_tool', tool_name: 'explode' }] } },
  {
    name: 'stop-content-match',
    script: [{ text: 'FINAL: 42', tool_calls: [call('c1', 'echo', { text: 'x' })] }],
    agent: { stop_conditions: [{ type: 'content_match', pattern: '^FINAL:' }] },
  },
  { name: 'stop-loop-detection', script: [loopStep(1), loopStep(2), loopStep(3)], agent: { stop_conditions: [{ type: 'loop_detection', window: 2 }] } },
  {
    name: 'retry-with-fallback-model',
    script: [{ error: 'down' }, { error: 'down' }],
    fallbackScript: [{ text: 'Answered by the spare model.' }],
    agent: { sections: { retry: { max_retries: 1, fallback_models: ['spare'], backoff_base_ms: 250 } } },
  },
  {
    name: 'circuit-breaker-open',
    script: [{ error: 'down' }, { error: 'down' }, { error: 'down' }],
    fallbackScript: [{ text: 'The breaker sent this to the spare model.' }],
    agent: { sections: { retry: { max_retries: 3, fallback_models: ['spare'], backoff_base_ms: 100 } } },
    extra: { circuitBreaker: { failure_threshold: 2, cooldown_ms: 60_000, half_open_max: 1 } },
  },
  { name: 'inference-error', script: [{ error: { code: 'timeout', message: 'no answer in time' } }] },
  {
    name: 'blocked-by-gate',
    script: [{ tool_calls: [call('c1', 'echo', { text: 'ok' }), call('c2', 'explode'), call('c3', 'echo', { text: 'never' })] }],
    agent: { plugin_ids: ['tool-gate'], sections: { tool_gate: { deny: ['explode'] } } },
    extra: { plugins: ['tool-gate'] },
  },
  {
    name: 'gate-ask-resumed',
    script: [{ tool_calls: [call('c1', 'echo', { text: 'ask first' })] }, { text: 'Allowed and echoed.' }],
    agent: { plugin_ids: ['tool-gate'], sections: { tool_gate: { ask: ['echo'] } } },
    extra: { plugins: ['tool-gate'], decide: approve() },
  },
  {
    name: 'behavior-requested',
    script: [{ text: 'All done. <END>', tool_calls: [call('c1', 'echo', { text: 'x' })] }],
    agent: { plugin_ids: ['finish-on'], sections: { finish_on: { phrase: '<END>' } } },
    extra: { plugins: ['finish-on'] },
  },
  {
    name: 'context-truncation',
    script: [{ text: 'Answered from the recent turns.' }],
    agent: { context_policy: { max_context_tokens: 1500, max_output_tokens: 500, min_recent_messages: 4 } },
    extra: { request: { messages: [...longConversation(16), Messages.user('scenario: context-truncation')] } },
  },
  {
    name: 'context-compaction',
    script: [{ text: 'The user asked about the corpus sixteen times.' }, { text: 'Answered with the summary in context.' }],
    agent: {
      context_policy: { autocompact_threshold: 1000, compaction_raw_suffix_messages: 2 },
      sections: { compaction: { min_gain_tokens: 200, summary_max_tokens: 256 } },
    },
    extra: { request: { messages: [...longConversation(16), Messages.user('scenario: context-compaction')] } },
  },
  {
    name: 'truncation-recovery',
    script: [
      { text: 'Calling echo with', partial_tool_call: { id: 'c1', name: 'echo', arguments_text: '{"text": "cut of' }, stop_reason: 'MaxTokens' },
      { tool_calls: [call('c2', 'echo', { text: 'whole' })] },
      { text: 'Recovered.' },
    ],
  },
  {
    name: 'deferred-tools-cycle',
    script: [
      { tool_calls: [call('c1', 'ToolSearch', { query: 'weather forecast' })] },
      { tool_calls: [call('c2', 'forecast', { option_0: 'Paris' })] },
      ...[3, 4, 5].map((i): ScriptStep => ({ tool_calls: [call(`c${i}`, 'echo', { text: `${i}` })] })),
      { text: 'The forecast was deferred again.' },
    ],
    agent: {
      plugin_ids: ['deferred-tools'],
      sections: { deferred_tools: { enabled: true, rules: [{ tool: 'echo', mode: 'eager' }], disc_beta: { defer_after: 2, gamma: 500 } } },
    },
    extra: { plugins: ['deferred-tools'], tools: [...CORPUS_TOOLS, forecastTool] },
  },
  {
    name: 'permission-ask-approved',
    script: [{ tool_calls: [call('c1', 'echo', { text: 'may I?' })] }, { text: 'Approved and echoed.' }],
    agent: { plugin_ids: ['permission'], sections: { permission: { default_behavior: 'ask', rules: [{ tool: 'fail', behavior: 'deny' }] } } },
    extra: { plugins: ['permission'], decide: approve() },
  },
  {
    name: 'permission-denied',
    script: [{ tool_calls: [call('c1', 'echo', { text: 'ls' }), call('c2', 'echo', { text: 'rm -rf /' })] }],
    agent: { plugin_ids: ['permission'], sections: { permission: { default_behavior: 'allow', rules: [{ tool: 'echo(text ~ "rm *")', behavior: 'deny' }] } } },
    extra: { plugins: ['permission'] },
  },
  {
    name: 'reminder-cooldown',
    script: [...[1, 2, 3].map((i): ScriptStep => ({ tool_calls: [call(`c${i}`, 'echo', { text: `${i}` })] })), { text: 'Reminded twice.' }],
    agent: {
      plugin_ids: ['reminder'],
      sections: {
        reminder: {
          rules: [
            {
              name: 'echoed',
              tool: 'echo',
              output: { status: 'success' },
              message: { target: 'suffix_system', content: 'You echoed; say what came back.', cooldown_turns: 2 },
            },
          ],
        },
      },
    },
    extra: { plugins: ['reminder'] },
  },
  {
    name: 'state-machine-read-before-write',
    script: [
      { tool_calls: [call('c1', 'Write', { file_path: 'src/a.rs', content: 'fn main() {}' })] },
      { tool_calls: [call('c2', 'Read', { file_path: 'src/a.rs' })] },
      { tool_calls: [call('c3', 'Write', { file_path: './src/a.rs', content: 'fn main() {}' })] },
      { text: 'Written after reading.' },
    ],
    agent: { plugin_ids: ['state_machine'], sections: { state_machine: readBeforeWrite(0) } },
    extra: { plugins: ['state_machine'], tools: [...CORPUS_TOOLS, ...fileTools] },
  },
  {
    name: 'state-machine-continuation',
    script: [
      { tool_calls: [call('c1', 'Read', { file_path: 'src/a.rs' })] },
      { text: 'I read it.' },
      { tool_calls: [call('c2', 'Write', { file_path: 'src/a.rs', content: 'x' })] },
      { text: 'Now it is written.' },
    ],
    agent: { plugin_ids: ['state_machine'], sections: { state_machine: readBeforeWrite(3) } },
    extra: { plugins: ['state_machine'], tools: [...CORPUS_TOOLS, ...fileTools] },
  },
  {
    name: 'handoff-overlay',
    script: [{ text: 'A specialist should take this.', tool_calls: [call('c1', 'hand_to', { agent: 'specialist' })] }],
    fallbackScript: [{ tool_calls: [call('c2', 'echo', { text: 'specialist here' })] }, { text: 'The specialist answered.' }],
    agent: {
      plugin_ids: ['agent_handoff'],
      sections: { handoff: { overlays: { specialist: { system_prompt: 'You are the specialist.', model_id: 'spare', allowed_tools: ['echo'] } } } },
    },
    extra: { plugins: ['agent_handoff'], tools: [...CORPUS_TOOLS, handTo] },
  },
  {
    name: 'delegation-local',
    script: [
      { text: 'Asking the researcher.', tool_calls: [call('c1', 'agent_run_researcher', { prompt: 'find two sources' })] },
      { text: 'The researcher found two sources.' },
    ],
    fallbackScript: [{ tool_calls: [call('k1', 'echo', { text: 'source search' })] }, { text: ['Two ', 'sources.'] }],
    agent: { delegates: ['researcher'] },
    extra: { delegates: [RESEARCHER] },
  },
  {
    name: 'delegation-child-suspended',
    script: [{ tool_calls: [call('c1', 'agent_run_researcher', { prompt: 'publish the findings' })] }, { text: 'Published, after the approval.' }],
    fallbackScript: [{ tool_calls: [call('k1', 'confirm', { action: 'publish' })] }, { text: 'Approved and published.' }],
    agent: { delegates: ['researcher'] },
    extra: { delegates: [RESEARCHER], decide: approve({ approved: true }) },
  },
  {
    name: 'a2ui-render',
    script: [
      {
        text: 'Here is a form.',
        tool_calls: [
          call('c1', 'render_a2ui', {
            messages: [
              {
                surfaceUpdate: {
                  surfaceId: 'order',
                  components: [
                    { id: 'root', component: { Column: { children: { explicitList: ['title', 'name'] } } } },
                    { id: 'title', component: { Text: { text: { literalString: 'Order' } } } },
                    { id: 'name', component: { TextField: { label: { literalString: 'Name' }, text: { path: '/order/name' } } } },
                  ],
                },
              },
              { dataModelUpdate: { surfaceId: 'order', path: '/order', contents: [{ key: 'name', valueString: 'Ada' }] } },
              { beginRendering: { surfaceId: 'order', root: 'root' } },
            ],
          }),
        ],
      },
      { text: 'The order form is on screen.' },
    ],
    // Recorded under A2UI v0.8, before v0.9 was the plugin's default (format 11 names the version).
    agent: { plugin_ids: ['generative-ui'], sections: { 'generative-ui': { version: 'v0.8' } } },
    extra: { plugins: ['generative-ui'] },
  },
  {
    name: 'skills-activation',
    script: [
      { tool_calls: [call('c1', 'list_skills')] },
      { tool_calls: [call('c2', 'skill', { skill: 'release-notes' })] },
      { tool_calls: [call('c3', 'load_skill_resource', { skill: 'release-notes', path: 'templates/entry.md' })] },
      { text: 'Release notes drafted with the skill.' },
    ],
    agent: {
      plugin_ids: ['skills-discovery', 'skills-active-instructions'],
      sections: {
        skills: {
          embedded: [
            {
              skill_md:
                '---\nname: release-notes\ndescription: Writes release notes from a change list\nallowed-tools: echo\n---\nGroup the changes by kind; one line each.\n',
              resources: { 'templates/entry.md': '- <kind>: <what changed>' },
            },
          ],
        },
      },
    },
    extra: { plugins: ['skills-discovery', 'skills-active-instructions'] },
  },
  {
    name: 'delegation-remote-a2a',
    script: [
      { text: 'Asking the analyst on the other server.', tool_calls: [call('c1', 'agent_run_analyst', { prompt: 'summarise the quarter' })] },
      { text: 'The analyst says: revenue grew.' },
    ],
    remote: [{ text: ['Revenue ', 'grew ', 'this quarter.'] }],
    agent: { delegates: ['analyst'] },
  },
  {
    // The observability plugin's spans (docs/observability.md): its draws (a trace id, span ids, tool
    // times) are in the transcript, so a replay reports the same spans. The clock ticks 5 ms a reading.
    name: 'observability-spans',
    script: [
      {
        text: 'Checking two things.',
        tool_calls: [call('c1', 'report', { steps: 2 }), call('c2', 'fail')],
        usage: { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 },
      },
      { text: 'One worked, one failed.', usage: { prompt_tokens: 55, completion_tokens: 8, total_tokens: 63 } },
    ],
    agent: { plugin_ids: ['observability'] },
    extra: { plugins: ['observability'] },
    tick: 5,
  },
  {
    // A tool the client runs (transcript format 10 keeps it in the header's request): the model calls
    // it, the run parks for the client's result, which comes back as a decision and is the call's result.
    name: 'client-tool-resumed',
    script: [
      { tool_calls: [call('c1', 'pick_color', { palette: 'warm' })] },
      { text: 'You picked red.', usage: { prompt_tokens: 40, completion_tokens: 4, total_tokens: 44 } },
    ],
    extra: {
      request: { messages: [Messages.user('scenario: client-tool-resumed')], clientTools: [pickColor] },
      decide: approve({ color: 'red' }),
    },
  },
  {
    // A click in an A2UI v0.9 surface: a first run on the thread draws an order form whose Button
    // sends an event; this run, the thread's next, is asked the click as the AG-UI decoder words it,
    // and the model answers with a surface and a sentence.
    name: 'a2ui-v09-action',
    earlier: {
      threadId: 'a2ui-order',
      script: [{ text: 'Here is the order form.', tool_calls: [call('c1', 'render_a2ui', orderForm)] }, { text: 'Fill it in and place the order.' }],
      next: clickOnSubmit,
    },
    script: [
      { tool_calls: [call('c2', 'render_a2ui', orderPlaced)] },
      { text: 'Your order is placed, Ada Lovelace.', usage: { prompt_tokens: 60, completion_tokens: 8, total_tokens: 68 } },
    ],
    agent: { plugin_ids: ['generative-ui'] },
    extra: { plugins: ['generative-ui'] },
  },
];

export const setupOf = (s: Scenario): RecordingSetup => base(s);

/**
 * Records a scenario: one with a remote agent starts an awaken server on a socket for it (a
 * deterministic environment, so recording it again gives the same transcript), and stops it after.
 */
export async function recordScenario(s: Scenario): Promise<Recording> {
  if (s.earlier !== undefined) {
    const { threadId, script, next } = s.earlier;
    const first = base({ ...s, script });
    const before = await recordRun({
      ...first,
      env: { ...first.env, env: withIdPrefix(first.env.env, 'earlier-') },
      request: { ...first.request, threadId },
    });
    return recordRun({ ...base(s), request: { threadId, history: before.messages, messages: next(threadId) } });
  }
  if (s.remote === undefined) return recordRun(base(s));
  const peer = await startA2aPeer(s.remote);
  try {
    const setup = base(s);
    const remote = {
      id: 'analyst',
      description: 'The analyst of another server',
      endpoint: { backend: 'a2a', base_url: `${peer.url}/v1/a2a`, target: 'analyst', timeout_ms: 30_000, options: { poll_interval_ms: 20 } },
    };
    return await recordRun({ ...setup, delegates: [...(setup.delegates ?? []), remote] });
  } finally {
    await peer.close();
  }
}

/** An awaken server on a socket with one agent, `analyst`, on a scripted model (the remote side of a delegation). */
async function startA2aPeer(script: readonly ScriptStep[]): Promise<{ readonly url: string; close(): Promise<void> }> {
  const store = new MemoryStore();
  const built = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('analyst', new ScriptedLlm(script))
    .withModel('analyst', { provider: 'analyst', model_name: 'scripted-analyst' })
    .withThreadRunStore(store)
    .withAgentSpec({ id: 'analyst', model: 'analyst', system_prompt: 'You analyse.' })
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  const registry = new RunRegistry(built.value, store);
  return listen(createHttpApp({ runtime: built.value, store, registry }), { port: 0 });
}
