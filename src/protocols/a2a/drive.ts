import { randomUUID } from 'node:crypto';
import { Message, TaskState, type StreamResponse } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, RestTransportFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { tappedFetch, type Capture, type Scenario } from '../findings.ts';

/**
 * The scenario through `@a2a-js/sdk`'s client against an agent's base URL (its card at
 * `/.well-known/agent-card.json`): `sendMessageStream` with the message, then the second message in the
 * same context; the first `INPUT_REQUIRED` task is answered on that task with a data part `{approved}`. Each streamed response body is a turn.
 */
export async function driveA2a(s: Scenario): Promise<Capture> {
  const bodies: Promise<string>[] = [];
  const fetchImpl = tappedFetch(bodies, s.headers, (url) => !url.includes('/.well-known/'));
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new RestTransportFactory({ fetchImpl }), new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  const client = await factory.createFromUrl(s.url);
  const id = randomUUID();
  let contextId: string | undefined;
  let waiting: { taskId: string } | undefined;
  let n = 0;
  const send = async (parts: unknown[], taskId?: string): Promise<void> => {
    n++;
    const message = Message.fromJSON({
      messageId: `judge-${id}-${n}`,
      role: 'ROLE_USER',
      parts,
      ...(contextId !== undefined ? { contextId } : {}),
      ...(taskId !== undefined ? { taskId } : {}),
    });
    waiting = undefined;
    for await (const f of client.sendMessageStream({ message, tenant: '' } as never) as AsyncIterable<StreamResponse>) {
      const p = f.payload;
      if (p?.$case === 'task') contextId = p.value.contextId;
      const state = p?.$case === 'task' ? p.value.status?.state : p?.$case === 'statusUpdate' ? p.value.status?.state : undefined;
      const task = p?.$case === 'task' ? p.value.id : p?.$case === 'statusUpdate' ? p.value.taskId : undefined;
      if (state === TaskState.TASK_STATE_INPUT_REQUIRED && task !== undefined) waiting = { taskId: task };
    }
  };
  let answered = false;
  let asked = false;
  for (const text of [s.message, ...(s.then !== undefined ? [s.then] : [])]) {
    await send([{ text }]);
    asked ||= waiting !== undefined;
    if (s.decision !== undefined && !answered && waiting !== undefined) {
      answered = true;
      await send([{ data: { approved: s.decision === 'approve' } }], waiting.taskId);
    }
  }
  return { bodies: await Promise.all(bodies), asked };
}
