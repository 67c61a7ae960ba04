import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import { Messages } from '../contract/message.ts';
import { realEnv } from '../runtime/env.ts';
import { acpAgent, type InteractiveHost } from '../server/acp-host.ts';
import { demoRuntimes, type Io } from './run-command.ts';

export const ACP_USAGE = `usage: awaken acp --model scripted:FILE|transcript:FILE

Serves the demo agent as an ACP v1 agent over stdio (newline-delimited JSON-RPC; logs on stderr):
initialize, session/new, session/prompt (session/update notifications, session/request_permission
for a suspended tool call — "approve" resumes it, anything else cancels it — then the stop reason)
and session/cancel. Each prompt runs the model file from its start.
`;

/** The demo agent on a file-backed model, as an ACP host: each prompt builds a fresh runtime. */
export function demoAcpHost(model: string): InteractiveHost | string {
  const runtimes = demoRuntimes(model);
  if (typeof runtimes === 'string') return runtimes;
  const env = realEnv();
  return {
    name: 'awaken-acp',
    now: () => env.clock.now(),
    newId: () => env.ids.next('session'),
    async start(message, emit, signal) {
      const started = await runtimes().start({ agentId: 'demo', messages: [Messages.user(message)] }, { emit }, { signal, waitForDecisions: true });
      if (!started.ok) throw new Error(started.error.code);
      return started.value;
    },
  };
}

/** `awaken acp`: the demo agent as an ACP agent on stdio, until stdin closes. */
export async function acpCommand(argv: readonly string[], io: Io): Promise<number> {
  if (argv.length !== 2 || argv[0] !== '--model' || argv[1] === undefined) {
    io.err(`awaken acp: --model is required\n${ACP_USAGE}`);
    return 64;
  }
  const host = demoAcpHost(argv[1]);
  if (typeof host === 'string') {
    io.err(`awaken acp: ${host}\n`);
    return 65;
  }
  const connection = acpAgent(host).connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>));
  await new Promise<void>((resolve) => process.stdin.once('end', resolve));
  void connection;
  return 0;
}
