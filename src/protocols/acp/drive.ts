import { spawn } from 'node:child_process';
import { PassThrough, Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import { DriveFailure, type Capture } from '../findings.ts';

export interface AcpScenario {
  /** The agent's command line, run by the shell (ACP is stdio only). */
  readonly command: string;
  readonly message: string;
  readonly decision?: 'approve' | 'deny';
  readonly then?: string;
  readonly cwd?: string;
}

/**
 * The scenario through `@agentclientprotocol/sdk`'s client against an agent process: `initialize`,
 * `session/new`, then a `session/prompt` per message. A permission the agent asks for is answered
 * within the turn: the first `allow` option for `approve`, the first `reject` option for `deny`, and
 * `cancelled` otherwise. A turn is what the agent wrote from the prompt to its response (NDJSON),
 * judged against that prompt's request id.
 */
export async function driveAcp(s: AcpScenario): Promise<Capture> {
  const child = spawn(s.command, { shell: true, stdio: ['pipe', 'pipe', 'inherit'], ...(s.cwd !== undefined ? { cwd: s.cwd } : {}) });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const lines: string[] = [];
  let partial = '';
  const tap = new PassThrough();
  child.stdout.on('data', (d: Buffer) => {
    partial += d.toString('utf8');
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts.filter((l) => l.trim() !== ''));
    tap.write(d);
  });
  child.stdout.on('end', () => tap.end());
  const sent = new Map<string, number | string>();
  const outgoing = new PassThrough();
  outgoing.on('data', (d: Buffer) => {
    for (const line of d
      .toString('utf8')
      .split('\n')
      .filter((l) => l !== '')) {
      const m = JSON.parse(line) as { id?: string | number; method?: string };
      if (m.id !== undefined && m.method === 'session/prompt') sent.set('prompt', m.id);
    }
  });
  outgoing.pipe(child.stdin);
  const bodies: string[] = [];
  const requestIds: (number | string)[] = [];
  let asked = false;
  try {
    const stream = acp.ndJsonStream(Writable.toWeb(outgoing), Readable.toWeb(tap) as ReadableStream<Uint8Array>);
    await Promise.race([
      exited.then((code) => {
        throw new DriveFailure(`the agent process exited (${String(code)}) before the conversation ended`);
      }),
      acp
        .client({ name: 'awaken-judge' })
        .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
          const first = !asked;
          asked = true;
          if (!first || s.decision === undefined) return { outcome: { outcome: 'cancelled' } };
          const option = params.options.find((o) => o.kind.startsWith(s.decision === 'approve' ? 'allow' : 'reject'));
          return option !== undefined ? { outcome: { outcome: 'selected', optionId: option.optionId } } : { outcome: { outcome: 'cancelled' } };
        })
        .onNotification(acp.methods.client.session.update, () => undefined)
        .connectWith(stream, async (agent) => {
          await agent.request(acp.methods.agent.initialize, {
            protocolVersion: acp.PROTOCOL_VERSION,
            clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
          });
          const { sessionId } = await agent.request(acp.methods.agent.session.new, { cwd: s.cwd ?? process.cwd(), mcpServers: [] });
          for (const text of [s.message, ...(s.then !== undefined ? [s.then] : [])]) {
            const from = lines.length;
            await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] }).catch(() => undefined);
            bodies.push(
              lines
                .slice(from)
                .map((l) => `${l}\n`)
                .join(''),
            );
            requestIds.push(sent.get('prompt') ?? 0);
          }
        }),
    ]);
  } finally {
    child.stdin.end();
    child.kill();
  }
  return { bodies, requestIds, asked };
}
