import { AgentCard, Message, Role, StreamResponse, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, RestTransportFactory } from '@a2a-js/sdk/client';
import { isDeepStrictEqual } from 'node:util';
import { describeFinding, finding, multiTurnFindings, sseFrames, sseJson, type Finding, type Frame, type ToolMention } from '../findings.ts';

/**
 * The official judge of an A2A 1.0 `message:stream` body (conformance-plan §4): the package has no
 * schema validator, so every frame goes through the SDK's codec — `StreamResponse.toJSON(fromJSON(x))`
 * must equal `x` (canonical proto3 JSON), with no `UNRECOGNIZED` state or role and a defined payload
 * (the client accepts both silently). Then the SDK's own `Client` (HTTP+JSON transport, its SSE
 * parser) reads the body as the response to `sendMessageStream`; what it yields is what the semantic
 * checks compare. Checked besides: the first frame is the task, every frame names its task and
 * context, and exactly one final state (terminal or interrupted) ends the stream. A body of the
 * JSON-RPC binding (each frame a response to the `message/stream` request) is unwrapped first.
 */
export interface A2aVerdict {
  /** The frames as the official client decoded them. */
  readonly frames: StreamResponse[];
  /** The final task state, as its enum name, and the text the `response` artifact carries. */
  readonly state: string | undefined;
  readonly text: string;
  /** What was found, check by check, with the frame at fault. */
  readonly findings: Finding[];
  readonly problems: string[];
  /** The tool calls the body names (data parts `{toolCall: {id, name}}`), for the `multi-turn` check. */
  readonly tools: ToolMention[];
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

const TERMINAL = new Set<number>([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);

export async function judgeA2a(body: string): Promise<A2aVerdict> {
  const findings: Finding[] = [];
  const tools: ToolMention[] = [];
  if (body.includes('\r')) findings.push(finding('schema', 'the body contains CR'));
  const decoded: StreamResponse[] = [];
  let taskId: string | undefined;
  let contextId: string | undefined;
  let finals = 0;
  /** Artifacts streamed and not yet closed by a `lastChunk`, and those closed. */
  const open = new Map<string, Frame>();
  const closed = new Set<string>();
  /** The frames as HTTP+JSON sends them (JSON-RPC envelopes removed), for the official client to read. */
  const unwrapped: string[] = [];
  let rpcId: unknown;
  for (const frame of sseFrames(body)) {
    const parsed = sseJson(frame);
    if ('finding' in parsed) {
      findings.push(parsed.finding);
      continue;
    }
    let json = parsed.value;
    // The JSON-RPC binding wraps each StreamResponse in a response to the message/stream request.
    if (typeof json === 'object' && json !== null && (json as { jsonrpc?: unknown }).jsonrpc !== undefined) {
      const envelope = json as { jsonrpc?: unknown; id?: unknown; result?: unknown; error?: { code?: unknown; message?: unknown } };
      if (envelope.jsonrpc !== '2.0') findings.push(finding('schema', 'jsonrpc is not "2.0"', frame));
      if (rpcId !== undefined && envelope.id !== rpcId)
        findings.push(finding('ordering', `a response to ${JSON.stringify(envelope.id)} in a stream answering ${JSON.stringify(rpcId)}`, frame));
      rpcId ??= envelope.id;
      if (envelope.error !== undefined) {
        findings.push(finding('terminal', `the stream ends in a JSON-RPC error ${String(envelope.error.code)}: ${String(envelope.error.message)}`, frame));
        continue;
      }
      json = envelope.result;
    }
    unwrapped.push(JSON.stringify(json));
    const r = StreamResponse.fromJSON(json);
    if (!isDeepStrictEqual(StreamResponse.toJSON(r), json))
      findings.push(finding('schema', 'not canonical A2A 1.0 JSON (StreamResponse.toJSON(fromJSON(frame)) differs)', frame));
    const p = r.payload;
    if (p === undefined) {
      findings.push(finding('schema', 'no payload', frame));
      continue;
    }
    if (finals > 0) findings.push(finding('ordering', `${p.$case} after the final state`, frame));
    if (frame.n === 1 && p.$case !== 'task') findings.push(finding('ordering', `the first frame is ${p.$case}, not the task`, frame));
    if (p.$case === 'task') {
      taskId = p.value.id;
      contextId = p.value.contextId;
    } else if (p.$case === 'statusUpdate' || p.$case === 'artifactUpdate') {
      if (p.value.taskId !== taskId || p.value.contextId !== contextId)
        findings.push(
          finding('ordering', `names task ${p.value.taskId} in ${p.value.contextId}, not the stream's task ${String(taskId)} in ${String(contextId)}`, frame),
        );
    }
    if (p.$case === 'artifactUpdate') {
      const id = p.value.artifact?.artifactId ?? '';
      if (closed.has(id)) findings.push(finding('ordering', `a chunk of artifact ${id} after its last chunk`, frame));
      else if (p.value.append && !open.has(id)) findings.push(finding('ordering', `an appended chunk of artifact ${id}, which was never started`, frame));
      if (!open.has(id)) open.set(id, frame);
      if (p.value.lastChunk) {
        open.delete(id);
        closed.add(id);
      }
    }
    const state = p.$case === 'task' ? p.value.status?.state : p.$case === 'statusUpdate' ? p.value.status?.state : undefined;
    if (state === TaskState.UNRECOGNIZED || state === TaskState.TASK_STATE_UNSPECIFIED) findings.push(finding('schema', 'an unrecognised task state', frame));
    if (state !== undefined && FINAL.has(state)) {
      finals++;
      if (finals > 1) findings.push(finding('terminal', 'a second final state', frame));
      if (TERMINAL.has(state))
        for (const [id, at] of open) findings.push(finding('closure', `artifact ${id} streamed from here has no last chunk before the task ends`, at));
    }
    const message = p.$case === 'message' ? p.value : p.$case === 'statusUpdate' ? p.value.status?.message : undefined;
    if (message !== undefined && (message.role === Role.UNRECOGNIZED || message.role === Role.ROLE_UNSPECIFIED))
      findings.push(finding('schema', 'an unrecognised role', frame));
    for (const part of message?.parts ?? []) {
      if (part.content?.$case !== 'data') continue;
      const call = (part.content.value as { toolCall?: { id?: unknown; name?: unknown } } | undefined)?.toolCall;
      if (typeof call?.id === 'string' && typeof call.name === 'string') tools.push({ id: call.id, name: call.name, frame });
    }
    decoded.push(r);
  }
  if (finals === 0) findings.push(finding('terminal', 'no final state (terminal or interrupted)'));
  const problems: string[] = [];

  // The official client reads the body as the response to message:stream.
  const frames: StreamResponse[] = [];
  const fetchImpl = async (input: string | URL | Request): Promise<Response> => {
    const url = String(input instanceof Request ? input.url : input);
    if (url.endsWith('/.well-known/agent-card.json')) return Response.json(AgentCard.toJSON(card()));
    if (url.endsWith('/message:stream'))
      return new Response(unwrapped.map((f) => `data: ${f}\n\n`).join(''), { headers: { 'content-type': 'text/event-stream' } });
    return new Response('{}', { status: 404 });
  };
  try {
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new RestTransportFactory({ fetchImpl })],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      }),
    );
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
  findings.push(...problems.map((p) => finding('client', p)));
  return { frames, state, text, findings, problems: findings.map(describeFinding), tools };
}

/** The turns of one conversation (the responses to one context's messages, in order). */
export async function judgeA2aTurns(bodies: readonly string[]): Promise<{ readonly findings: Finding[]; readonly frames: number[] }> {
  const findings: Finding[] = [];
  const frames: number[] = [];
  const mentions: ToolMention[][] = [];
  const contexts = new Map<string, number>();
  for (const [i, body] of bodies.entries()) {
    const v = await judgeA2a(body);
    findings.push(...v.findings.map((f) => ({ ...f, turn: i + 1 })));
    frames.push(sseFrames(body).length);
    mentions.push(v.tools);
    const first = v.frames[0]?.payload;
    if (first?.$case === 'task') contexts.set(first.value.contextId, i + 1);
  }
  if (contexts.size > 1)
    findings.push(finding('multi-turn', `the turns run in ${contexts.size} contexts (${[...contexts.keys()].join(', ')}), not one conversation`));
  findings.push(...multiTurnFindings(mentions));
  return { findings, frames };
}
