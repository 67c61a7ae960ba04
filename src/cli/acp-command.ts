import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import { Messages } from '../contract/message.ts';
import type { AgentRuntime } from '../runtime/agent-runtime.ts';
import { realEnv } from '../runtime/env.ts';
import { MemoryThreadRunStore } from '../runtime/thread-run-store.ts';
import { acpAgent, type InteractiveHost } from '../server/acp-host.ts';
import { runCli, stringOf, UsageError, type CommandSpec, type Io } from './args.ts';
import type { LoadedApp } from '../app/load.ts';
import { appOption, checkApp } from './app-option.ts';
import { agentNamed, appRuntime } from './config-runtime.ts';
import { EXIT } from './exit.ts';
import { demoRuntimes } from './run-command.ts';
import { ACP_USAGE } from './usages.ts';

export { ACP_USAGE };

/** A session's runtime and the store that holds its thread. */
interface Session {
  readonly runtime: AgentRuntime;
  readonly store: MemoryThreadRunStore;
}

/** An ACP host of `agentId`: `open` gives each new session the runtime it runs on (and its store). */
function sessionsHost(agentId: string, open: () => Session): InteractiveHost {
  const env = realEnv();
  const sessions = new Map<string, Session>();
  return {
    name: 'awaken-acp',
    now: () => env.clock.now(),
    sleep: (ms, signal) => env.sleep(ms, signal),
    newSession: () => {
      const id = env.ids.next('session');
      sessions.set(id, open());
      return id;
    },
    history: async (sessionId) => {
      const session = sessions.get(sessionId);
      return session === undefined ? undefined : ((await session.store.loadThread(sessionId))?.messages ?? []);
    },
    async start(sessionId, message, emit, signal) {
      const session = sessions.get(sessionId);
      if (session === undefined) throw new Error(`unknown session ${sessionId}`);
      const started = await session.runtime.start(
        { agentId, threadId: sessionId, messages: [Messages.user(message)] },
        { emit },
        { signal, waitForDecisions: true },
      );
      if (!started.ok) throw new Error(started.error.code);
      return started.value;
    },
  };
}

/**
 * The demo agent on a file-backed model, as an ACP host: each session gets its own runtime (its model
 * file from the start) and one thread, so the prompts of a session continue one conversation.
 */
export function demoAcpHost(model: string): InteractiveHost {
  const runtimes = demoRuntimes(model);
  return sessionsHost('demo', () => {
    const store = new MemoryThreadRunStore();
    return { runtime: runtimes(store), store };
  });
}

/**
 * An app's agent as an ACP host: one runtime and store for every session, each session its own
 * thread (a scripted provider runs from its start in each thread).
 */
export function appAcpHost(loaded: LoadedApp, agent: string | undefined): InteractiveHost {
  checkApp(loaded);
  const agentId = agentNamed(loaded.app.agents, agent, loaded.file).id;
  const store = new MemoryThreadRunStore();
  const session = { runtime: appRuntime(loaded, realEnv(), store), store };
  return sessionsHost(agentId, () => session);
}

export const ACP_COMMAND: CommandSpec = {
  command: 'acp',
  usage: ACP_USAGE,
  options: { model: { type: 'string' }, app: { type: 'string' }, agent: { type: 'string' } },
};

/** `awaken acp`: the demo agent (or an app's) as an ACP agent on stdio, until stdin closes. */
export async function acpCommand(argv: readonly string[], io: Io): Promise<number> {
  return runCli(ACP_COMMAND, argv, io, async (args) => {
    const model = stringOf(args, 'model');
    const app = stringOf(args, 'app');
    const agent = stringOf(args, 'agent');
    if (app !== undefined && model !== undefined) throw new UsageError("--model sets the demo agent's model; with --app the app's models answer");
    if (app === undefined && model === undefined) throw new UsageError('--model is required (scripted:FILE or transcript:FILE), or --app FILE');
    if (app === undefined && agent !== undefined) throw new UsageError('--agent names an agent of the app: give --app FILE (without it the agent is demo)');
    const host = app !== undefined ? appAcpHost(await appOption(app), agent) : demoAcpHost(model as string);
    const connection = acpAgent(host).connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>));
    await new Promise<void>((resolve) => process.stdin.once('end', resolve));
    void connection;
    return EXIT.ok;
  });
}
