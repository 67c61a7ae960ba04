import { AgentCard, Message, Role, StreamResponse, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, RestTransportFactory } from '@a2a-js/sdk/client';
import { isDeepStrictEqual } from 'node:util';

/**
 * The official judge of an A2A 1.0 `message:stream` body (conformance-plan §4): the package has no
 * schema validator, so every frame goes through the SDK's codec — `StreamResponse.toJSON(fromJSON(x))`
 * must equal `x` (canonical proto3 JSON), with no `UNRECOGNIZED` state or role and a defined payload
 * (the client accepts both silently). Then the SDK's own `Client` (HTTP+JSON transport, its SSE
 * parser) reads the body as the response to `sendMessageStream`; what it yields is what the semantic
 * checks compare. Checked besides: the first frame is the task, every frame names its task and
 * context, and exactly one final state (terminal or interrupted) ends the stream.
 */
export interface A2aVerdict {
  /** The frames as the official client decoded them. */
  readonly frames: StreamResponse[];
  /** The final task state, as its enum name, and the text the `response` artifact carries. */
  readonly state: string | undefined;
  readonly text: string;
  readonly problems: string[];
}

const FINAL = new Set<number>([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_AUTH_REQUIRED,
]);

const BASE = 'http://a2a.judge';

function card(): AgentCard {
  return AgentCard.fromJSON({
    name: 'judge',
    description: 'replays one recorded stream',
    version: '0.0.0',
    supportedInterfaces: [{ url: `${BASE}/v1/a2a`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' }],
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
  });
}

export async function judgeA2a(body: string): Promise<A2aVerdict> {
  const problems: string[] = [];
  if (body.includes('\r')) problems.push('the body contains CR');
  const decoded: StreamResponse[] = [];
  let taskId: string | undefined;
  let contextId: string | undefined;
  let finals = 0;
  body
    .split('\n\n')
    .filter((f) => f !== '')
    .forEach((frame, i) => {
      if (!frame.startsWith('data: ')) {
        problems.push(`frame ${i + 1} is not a data frame`);
        return;
      }
      let json: unknown;
      try {
        json = JSON.parse(frame.slice(6));
      } catch {
        problems.push(`frame ${i + 1} is not JSON`);
        return;
      }
      const r = StreamResponse.fromJSON(json);
      if (!isDeepStrictEqual(StreamResponse.toJSON(r), json)) problems.push(`frame ${i + 1} is not canonical A2A 1.0 JSON: ${frame.slice(6, 200)}`);
      const p = r.payload;
      if (p === undefined) {
        problems.push(`frame ${i + 1} has no payload`);
        return;
      }
      if (finals > 0) problems.push(`frame ${i + 1} (${p.$case}) after the final state`);
      if (i === 0 && p.$case !== 'task') problems.push(`the first frame is ${p.$case}, not the task`);
      if (p.$case === 'task') {
        taskId = p.value.id;
        contextId = p.value.contextId;
      } else if (p.$case === 'statusUpdate' || p.$case === 'artifactUpdate') {
        if (p.value.taskId !== taskId || p.value.contextId !== contextId) problems.push(`frame ${i + 1} names task ${p.value.taskId} in ${p.value.contextId}`);
      }
      const state = p.$case === 'task' ? p.value.status?.state : p.$case === 'statusUpdate' ? p.value.status?.state : undefined;
      if (state === TaskState.UNRECOGNIZED || state === TaskState.TASK_STATE_UNSPECIFIED) problems.push(`frame ${i + 1}: unrecognised task state`);
      if (state !== undefined && FINAL.has(state)) finals++;
      const message = p.$case === 'message' ? p.value : p.$case === 'statusUpdate' ? p.value.status?.message : undefined;
      if (message !== undefined && (message.role === Role.UNRECOGNIZED || message.role === Role.ROLE_UNSPECIFIED)) problems.push(`frame ${i + 1}: unrecognised role`);
      decoded.push(r);
    });
  if (finals !== 1) problems.push(`${finals} final states, not exactly one`);

  // The official client reads the body as the response to message:stream.
  const frames: StreamResponse[] = [];
  const fetchImpl = async (input: string | URL | Request): Promise<Response> => {
    const url = String(input instanceof Request ? input.url : input);
    if (url.endsWith('/.well-known/agent-card.json')) return Response.json(AgentCard.toJSON(card()));
    if (url.endsWith('/message:stream')) return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
    return new Response('{}', { status: 404 });
  };
  try {
    const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new RestTransportFactory({ fetchImpl })],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      }));
    const client = await factory.createFromUrl(BASE);
    const message = Message.fromJSON({ messageId: 'judge-1', role: 'ROLE_USER', parts: [{ text: 'go' }] });
    for await (const ev of client.sendMessageStream({ message, tenant: '' } as never)) frames.push(ev);
  } catch (e) {
    problems.push(`the official client fails: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (frames.length !== decoded.length) problems.push(`the client yields ${frames.length} frames, the body has ${decoded.length}`);

  let state: string | undefined;
  let text = '';
  for (const f of frames) {
    const p = f.payload;
    if (p?.$case === 'task' || p?.$case === 'statusUpdate') state = TaskState[p.value.status?.state ?? TaskState.UNRECOGNIZED];
    if (p?.$case === 'artifactUpdate') {
      for (const part of p.value.artifact?.parts ?? []) if (part.content?.$case === 'text') text += part.content.value;
    }
  }
  return { frames, state, text, problems };
}
