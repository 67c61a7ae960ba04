import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import { Messages } from '../contract/message.ts';
import type { AgentRuntime } from '../runtime/agent-runtime.ts';
import { realEnv } from '../runtime/env.ts';
import { MemoryThreadRunStore } from '../runtime/thread-run-store.ts';
import { acpAgent, type InteractiveHost } from '../server/acp-host.ts';
import { runCli, stringOf, UsageError, type CommandSpec, type Io } from './args.ts';
import { EXIT } from './exit.ts';
import { demoRuntimes } from './run-command.ts';

export const ACP_USAGE = `usage: awaken acp --model scripted:FILE|transcript:FILE

Serves the demo agent as an ACP v1 agent over stdio (newline-delimited JSON-RPC; logs on stderr):
initialize, session/new, session/prompt (session/update notifications, session/request_permission
for a suspended tool call — "approve" resumes it, anything else cancels it — then the stop reason)
and session/cancel. A session is one conversation: its prompts run one after another on its thread,
and its model file runs from its start in each session; session/load replays a session's
conversation (its user and agent messages, its tool calls) as session updates.
`;

/**
 * The demo agent on a file-backed model, as an ACP host: each session gets its own runtime (its model
 * file from the start) and one thread, so the prompts of a session continue one conversation.
 */
export function demoAcpHost(model: string): InteractiveHost {
  const runtimes = demoRuntimes(model);
  const env = realEnv();
  const sessions = new Map<string, { readonly runtime: AgentRuntime; readonly store: MemoryThreadRunStore }>();
  return {
    name: 'awaken-acp',
    now: () => env.clock.now(),
    newSession: () => {
      const id = env.ids.next('session');
      const store = new MemoryThreadRunStore();
      sessions.set(id, { runtime: runtimes(store), store });
      return id;
    },
    history: async (sessionId) => {
      const session = sessions.get(sessionId);
      return session === undefined ? undefined : ((await session.store.loadThread(sessionId))?.messages ?? []);
    },
    async start(sessionId, message, emit, signal) {
      const session = sessions.get(sessionId);
      if (session === undefined) throw new Error(`unknown session ${sessionId}`);
      const started = await session.runtime.start({ agentId: 'demo', threadId: sessionId, messages: [Messages.user(message)] }, { emit }, { signal, waitForDecisions: true });
      if (!started.ok) throw new Error(started.error.code);
      return started.value;
    },
  };
}

export const ACP_COMMAND: CommandSpec = { command: 'acp', usage: ACP_USAGE, options: { model: { type: 'string' } } };

/** `awaken acp`: the demo agent as an ACP agent on stdio, until stdin closes. */
export async function acpCommand(argv: readonly string[], io: Io): Promise<number> {
  return runCli(ACP_COMMAND, argv, io, async (args) => {
    const model = stringOf(args, 'model');
    if (model === undefined) throw new UsageError('--model is required (scripted:FILE or transcript:FILE)');
    const host = demoAcpHost(model);
    const connection = acpAgent(host).connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>));
    await new Promise<void>((resolve) => process.stdin.once('end', resolve));
    void connection;
    return EXIT.ok;
  });
}
