import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { serialiseEvent, type AgentEvent } from '../contract/event.ts';
import { Messages } from '../contract/message.ts';
import { parseScript, ScriptedLlm } from '../providers/scripted.ts';
import { AgentRuntimeBuilder } from '../runtime/agent-runtime.ts';
import { deterministicEnv } from '../runtime/env.ts';
import { DEMO_TOOLS, demoAgent } from './demo.ts';

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export const RUN_USAGE = `usage: awaken run --model scripted:FILE [--agent demo] [--format jsonl|pretty] [--decide approve|deny] "message"

  --model scripted:FILE   a scripted model (JSON or YAML steps; docs/scripted-models.md)
  --agent ID              the agent to run (default: demo)
  --format jsonl|pretty   one canonical AgentEvent per line (default), or readable lines
  --decide approve|deny   answer every suspended tool call; without it a suspension ends the run
`;

interface RunArgs {
  model: string;
  agent: string;
  format: 'jsonl' | 'pretty';
  decide: 'approve' | 'deny' | undefined;
  message: string;
}

function parseArgs(argv: readonly string[]): RunArgs | string {
  const args: Partial<RunArgs> = { agent: 'demo', format: 'jsonl' };
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const value = (): string | undefined => argv[++i];
    switch (a) {
      case '--model':
      case '--agent': {
        const v = value();
        if (v === undefined) return `${a} needs a value`;
        if (a === '--model') args.model = v;
        else args.agent = v;
        break;
      }
      case '--format': {
        const f = value();
        if (f !== 'jsonl' && f !== 'pretty') return `--format must be jsonl or pretty, not '${f ?? ''}'`;
        args.format = f;
        break;
      }
      case '--decide': {
        const d = value();
        if (d !== 'approve' && d !== 'deny') return `--decide must be approve or deny, not '${d ?? ''}'`;
        args.decide = d;
        break;
      }
      default:
        if (a.startsWith('--')) return `unknown option ${a}`;
        rest.push(a);
    }
  }
  if (args.model === undefined) return '--model is required';
  if (rest.length !== 1) return 'exactly one message is required';
  return { ...(args as RunArgs), message: rest[0] as string };
}

/** `awaken run`: runs one agent on a scripted model and prints its events; returns the exit code. */
export async function runCommand(argv: readonly string[], io: Io): Promise<number> {
  const args = parseArgs(argv);
  if (typeof args === 'string') {
    io.err(`awaken run: ${args}\n${RUN_USAGE}`);
    return 64;
  }
  if (!args.model.startsWith('scripted:')) {
    io.err(`awaken run: only scripted models are available here (--model scripted:FILE), not '${args.model}'\n`);
    return 64;
  }
  const file = args.model.slice('scripted:'.length);
  let steps: ReturnType<typeof parseScript>;
  try {
    steps = parseScript(readFileSync(file, 'utf8'), extname(file) === '.json' ? 'json' : 'yaml');
  } catch (e) {
    io.err(`awaken run: cannot read script ${file}: ${e instanceof Error ? e.message : String(e)}\n`);
    return 65;
  }

  // A scripted model gets a deterministic environment, so the same script prints the same bytes.
  const builder = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('scripted', new ScriptedLlm(steps))
    .withModel('scripted', { provider: 'scripted', model_name: 'scripted' })
    .withAgentSpec(demoAgent('scripted'));
  for (const tool of DEMO_TOOLS) builder.withTool(tool);
  const built = builder.build();
  if (!built.ok) {
    io.err(`awaken run: ${JSON.stringify(built.error)}\n`);
    return 70;
  }
  const runtime = built.value;
  const suspended = new Set<string>();
  const decide = args.decide;
  const answer = (threadId: string): void => {
    // The run parks right after it emits run_finish{suspended}: answer once it waits.
    if (!runtime.isWaiting(threadId)) {
      setImmediate(() => answer(threadId));
      return;
    }
    const decisions = [...suspended].map((targetId) => ({
      targetId,
      decision:
        decide === 'approve'
          ? { decision_id: `cli-${targetId}`, action: 'resume' as const, result: { approved: true }, updated_at: runtime.env.clock.now() }
          : { decision_id: `cli-${targetId}`, action: 'cancel' as const, reason: 'denied', updated_at: runtime.env.clock.now() },
    }));
    suspended.clear();
    runtime.decide(threadId, decisions);
  };
  const started = await runtime.start(
    { agentId: args.agent, messages: [Messages.user(args.message)] },
    {
      emit: (event) => {
        io.out(`${args.format === 'jsonl' ? serialiseEvent(event) : pretty(event)}\n`);
        if (event.event_type === 'tool_call_done' && event.outcome === 'suspended') suspended.add(event.id);
        if (event.event_type === 'run_finish' && event.termination.type === 'suspended' && decide !== undefined) {
          const threadId = event.thread_id;
          setImmediate(() => answer(threadId));
        }
      },
    },
    { waitForDecisions: decide !== undefined },
  );
  if (!started.ok) {
    io.err(`awaken run: ${started.error.code}: ${JSON.stringify(started.error)}\n`);
    return 64;
  }
  const result = await started.value.done;
  return result.termination.type === 'error' ? 1 : 0;
}

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
    default:
      return `${e.event_type}`;
  }
}
