import { serialiseEvent, type AgentEvent } from '../contract/event.ts';
import { Messages } from '../contract/message.ts';
import { AgentRuntimeBuilder, type AgentRuntime } from '../runtime/agent-runtime.ts';
import { deterministicEnv } from '../runtime/env.ts';
import { MemoryThreadRunStore, type ThreadRunStore } from '../runtime/thread-run-store.ts';
import type { LlmExecutor } from '../runtime/llm.ts';
import { decisionFor, type Decision } from '../contract/decision.ts';
import { scheduleOf } from '../contract/tool.ts';
import { CliFailure, runCli, type Io } from './args.ts';
import { DEMO_TOOLS, demoAgent } from './demo.ts';
import { appOption, checkApp } from './app-option.ts';
import { agentNamed, appRuntime } from './config-runtime.ts';
import { EXIT } from './exit.ts';
import { modelFactoryOf, modelOf, parseRunArgs, RUN_COMMAND, RUN_USAGE, type RunPlan } from './run-plan.ts';
import { unreachable } from '../contract/never.ts';

export { RUN_USAGE, type Io };

/** The decisions `--decide` sends for the suspended calls. */
export function decisionsFor(decide: 'approve' | 'deny', ids: readonly string[], now: number): Decision[] {
  return ids.map((targetId) =>
    decide === 'approve'
      ? decisionFor(targetId, 'resume', now, { decisionId: `cli-${targetId}`, result: { approved: true } })
      : decisionFor(targetId, 'cancel', now, { decisionId: `cli-${targetId}`, reason: 'denied' }),
  );
}

/**
 * The demo agent and its tools on a file-backed model. A file-backed model gets a deterministic
 * environment, so the same file prints the same bytes; threads live in memory (a conversation
 * continued on one runtime sees its earlier turns).
 */
export function demoRuntime(llm: LlmExecutor, model: string, store: ThreadRunStore = new MemoryThreadRunStore()): ReturnType<AgentRuntimeBuilder['build']> {
  const builder = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withThreadRunStore(store)
    .withProvider('model', llm)
    .withModel('model', { provider: 'model', model_name: model.split(':')[0] as string })
    .withAgentSpec(demoAgent('model'));
  for (const tool of DEMO_TOOLS) builder.withTool(tool);
  return builder.build();
}

/**
 * A fresh demo runtime per call on a file-backed model, so each call runs the file from its start.
 * The model is checked once, up front (a `CliFailure` when it cannot be had).
 */
export function demoRuntimes(model: string): (store?: ThreadRunStore) => AgentRuntime {
  const fresh = modelFactoryOf(model);
  return (store) => {
    const runtime = demoRuntime(fresh(), model, store);
    if (!runtime.ok) throw new CliFailure(`the demo agent does not build: ${runtime.error.code}`, EXIT.internal);
    return runtime.value;
  };
}

/** `awaken run`: runs one agent (the demo agent on a file-backed model, or an app's) and prints its events; returns the exit code. */
export async function runCommand(argv: readonly string[], io: Io): Promise<number> {
  return runCli(RUN_COMMAND, argv, io, async () => {
    const plan = parseRunArgs(argv);
    if (plan === 'help') return EXIT.ok;
    return runPlan(plan, io);
  });
}

/** The runtime and agent a plan runs: the demo agent on its model, or the app's agent on the app's (both in a deterministic Env). */
async function runtimeOf(plan: RunPlan): Promise<{ readonly rt: AgentRuntime; readonly agent: string }> {
  if (plan.app === undefined) {
    const runtime = demoRuntime(modelOf(plan.model), plan.model);
    if (!runtime.ok) throw new CliFailure(`the demo agent does not build: ${runtime.error.code}`, EXIT.internal);
    return { rt: runtime.value, agent: plan.agent ?? 'demo' };
  }
  const loaded = await appOption(plan.app);
  checkApp(loaded);
  const agent = agentNamed(loaded.app.agents, plan.agent, loaded.file);
  return { rt: appRuntime(loaded, deterministicEnv(), new MemoryThreadRunStore()), agent: agent.id };
}

async function runPlan(plan: RunPlan, io: Io): Promise<number> {
  const { rt, agent } = await runtimeOf(plan);
  const suspended = new Set<string>();
  const decide = plan.decide;
  let finished = false;
  const answer = (threadId: string): void => {
    if (finished || decide === undefined) return;
    // The run parks right after it emits run_finish{suspended}: answer once it waits.
    if (!rt.isWaiting(threadId)) {
      setImmediate(() => answer(threadId));
      return;
    }
    // Only scheduled calls wait: nothing here wakes them (no mailbox), and --decide must not.
    if (suspended.size === 0) {
      rt.cancel(threadId);
      return;
    }
    const decisions = decisionsFor(decide, [...suspended], rt.env.clock.now());
    suspended.clear();
    rt.decide(threadId, decisions);
  };
  const started = await rt.start(
    { agentId: agent, messages: [Messages.user(plan.message)] },
    {
      emit: (event) => {
        io.out(`${plan.format === 'jsonl' ? serialiseEvent(event) : pretty(event)}\n`);
        // A scheduled call is the server's to wake, never a decision's.
        if (event.event_type === 'tool_call_done' && event.outcome === 'suspended' && scheduleOf(event.result.suspension?.suspension) === undefined)
          suspended.add(event.id);
        if (event.event_type === 'run_finish' && event.termination.type === 'suspended' && decide !== undefined) {
          const threadId = event.thread_id;
          setImmediate(() => answer(threadId));
        }
      },
    },
    { waitForDecisions: decide !== undefined },
  );
  if (!started.ok)
    throw new CliFailure(
      started.error.code === 'agent_not_found' ? `no agent '${agent}' (the demo agent is 'demo')` : `the run did not start: ${started.error.code}`,
      EXIT.usage,
    );
  const result = await started.value.done;
  finished = true;
  return result.termination.type === 'error' ? EXIT.failed : EXIT.ok;
}

export type { RunPlan };

function pretty(e: AgentEvent): string {
  switch (e.event_type) {
    case 'text_delta':
      return `text      ${JSON.stringify(e.delta)}`;
    case 'reasoning_delta':
      return `reasoning ${JSON.stringify(e.delta)}`;
    case 'tool_call_ready':
      return `tool      ${e.name}(${JSON.stringify(e.arguments)}) [${e.id}]`;
    case 'tool_call_done':
      return `result    [${e.id}] ${e.outcome}: ${e.result.message ?? JSON.stringify(e.result.data)}`;
    case 'tool_call_resumed':
      return `resumed   [${e.target_id}] ${JSON.stringify(e.result)}`;
    case 'run_finish':
      return `finish    ${e.termination.type}${'value' in e.termination ? ` ${JSON.stringify(e.termination.value)}` : ''}`;
    case 'step_start':
      return 'step';
    case 'run_start':
    case 'error':
    case 'tool_call_start':
    case 'tool_call_delta':
    case 'tool_call_stream_delta':
    case 'reasoning_encrypted_value':
    case 'messages_snapshot':
    case 'activity_snapshot':
    case 'activity_delta':
    case 'step_end':
    case 'inference_complete':
    case 'state_snapshot':
    case 'state_delta':
      return `${e.event_type}`;
    default:
      return unreachable(e);
  }
}
