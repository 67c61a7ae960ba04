import { createRequire } from 'node:module';
import * as acp from '@agentclientprotocol/sdk';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describeFinding, finding, multiTurnFindings, ndjsonFrames, type Finding, type Frame, type ToolMention } from '../findings.ts';

/**
 * The official judge of one ACP `session/prompt` turn as the agent sends it (NDJSON of JSON-RPC
 * messages; conformance-plan §6): every line against the v1 JSON Schema of the SDK
 * (`schema/v1/schema.json`, with Ajv 2020) — `SessionNotification`, `RequestPermissionRequest`,
 * `PromptResponse` — because the SDK's client validates requests and notifications but not
 * responses, and drops a bad notification with only a `console.error`. Then the same turn is played
 * by an SDK agent to an SDK client over in-memory NDJSON streams; the client's updates, permission
 * requests and the prompt's outcome are what the semantic checks compare, and any console error the
 * client prints is a problem.
 */
export interface AcpVerdict {
  /** `session/update` kinds and payloads the official client received, in order. */
  readonly updates: { readonly sessionUpdate: string; readonly [key: string]: unknown }[];
  readonly permissions: number;
  readonly stopReason: string | undefined;
  /** The prompt's error message, when it failed. */
  readonly error: string | undefined;
  /** What was found, check by check, with the line at fault. */
  readonly findings: Finding[];
  readonly problems: string[];
  /** The tool calls the turn names, for the `multi-turn` check. */
  readonly tools: ToolMention[];
}

type Validate = ((v: unknown) => boolean) & { errors?: unknown };

let schemas: { notification: Validate; permission: Validate; response: Validate } | undefined;
function validators(): { notification: Validate; permission: Validate; response: Validate } {
  if (schemas !== undefined) return schemas;
  const schema = createRequire(import.meta.url)('@agentclientprotocol/sdk/schema/v1/schema.json') as Record<string, unknown>;
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  ajv.addSchema({ ...schema, $id: 'acp' });
  const get = (name: string): Validate => ajv.getSchema(`acp#/$defs/${name}`) as Validate;
  schemas = { notification: get('SessionNotification'), permission: get('RequestPermissionRequest'), response: get('PromptResponse') };
  return schemas;
}

interface Line {
  readonly id?: string | number;
  readonly method?: string;
  readonly params?: unknown;
  readonly result?: unknown;
  readonly error?: { code: number; message: string };
}

export async function judgeAcp(body: string, requestId: number | string = 1): Promise<AcpVerdict> {
  const findings: Finding[] = [];
  const tools: ToolMention[] = [];
  const v = validators();
  const lines: Line[] = [];
  if (!body.endsWith('\n')) findings.push(finding('terminal', 'the body does not end with a newline'));
  const frames = ndjsonFrames(body);
  /** Each tool call's last status and the line that opened it. */
  const calls = new Map<string, { status: string; readonly frame: Frame }>();
  let responses = 0;
  for (const line of frames) {
    let m: Line & { jsonrpc?: unknown };
    try {
      m = JSON.parse(line.text) as Line & { jsonrpc?: unknown };
    } catch {
      findings.push(finding('schema', 'not JSON', line));
      continue;
    }
    if (m.jsonrpc !== '2.0') findings.push(finding('schema', 'jsonrpc is not "2.0"', line));
    const check = (name: string, validate: Validate, value: unknown): void => {
      if (validate(value)) return;
      // The first of the schema's errors, on one line: where, and what.
      const errors = (validate.errors ?? []) as readonly { readonly instancePath: string; readonly message?: string }[];
      const first = errors[0];
      const where = first === undefined ? '' : `${first.instancePath === '' ? '(top level)' : first.instancePath}: ${first.message ?? 'invalid'}`;
      findings.push(
        finding('schema', `${name} rejects it${where !== '' ? `: ${where}` : ''}${errors.length > 1 ? ` (and ${errors.length - 1} more)` : ''}`, line),
      );
    };
    if (responses > 0)
      findings.push(
        finding(m.method === undefined ? 'terminal' : 'ordering', m.method === undefined ? 'a second response' : `${m.method} after the response`, line),
      );
    if (m.method === 'session/update') {
      check('SessionNotification', v.notification, m.params);
      const u = (m.params as { update?: { sessionUpdate?: string; toolCallId?: string; title?: string; status?: string } } | undefined)?.update;
      if (u?.sessionUpdate === 'tool_call' && typeof u.toolCallId === 'string') {
        if (calls.has(u.toolCallId)) findings.push(finding('ordering', `tool_call ${u.toolCallId} announced a second time`, line));
        calls.set(u.toolCallId, { status: u.status ?? 'pending', frame: line });
        tools.push({ id: u.toolCallId, name: u.title ?? '', frame: line });
      } else if (u?.sessionUpdate === 'tool_call_update' && typeof u.toolCallId === 'string') {
        const call = calls.get(u.toolCallId);
        if (call === undefined)
          findings.push(finding('ordering', `tool_call_update for tool call ${u.toolCallId}, which was never announced (tool_call)`, line));
        else if (u.status !== undefined) call.status = u.status;
      }
    } else if (m.method === 'session/request_permission') {
      if (m.id === undefined) findings.push(finding('schema', 'a permission request without an id', line));
      check('RequestPermissionRequest', v.permission, m.params);
    } else if (m.method !== undefined) findings.push(finding('ordering', `unexpected method ${m.method} during session/prompt`, line));
    else {
      responses++;
      if (m.id !== requestId) findings.push(finding('ordering', `a response to ${JSON.stringify(m.id)}, not ${JSON.stringify(requestId)}`, line));
      if (m.error === undefined) check('PromptResponse', v.response, m.result);
      else if (typeof m.error.code !== 'number' || typeof m.error.message !== 'string') findings.push(finding('schema', 'a malformed error', line));
      const stop = (m.result as { stopReason?: string } | undefined)?.stopReason;
      if (m.error === undefined && stop !== 'cancelled') {
        // `pending` is a call that waits (for its input, or for a permission the turn left open).
        for (const [id, call] of calls)
          if (call.status === 'in_progress')
            findings.push(finding('closure', `tool call ${id} announced here is still in_progress when the turn ends (${String(stop)})`, call.frame));
      }
    }
    lines.push(m);
  }
  if (responses === 0) findings.push(finding('terminal', 'no response to session/prompt'));

  const updates: AcpVerdict['updates'] = [];
  let permissions = 0;
  let stopReason: string | undefined;
  let error: string | undefined;
  if (findings.length > 0) return { updates, permissions, stopReason, error, findings, problems: findings.map(describeFinding), tools };
  const problems: string[] = [];

  // The same turn between the SDK's own agent and client.
  const toAgent = new TransformStream<Uint8Array, Uint8Array>();
  const toClient = new TransformStream<Uint8Array, Uint8Array>();
  const agentApp = acp
    .agent({ name: 'awaken-judge-agent' })
    .onRequest(acp.methods.agent.initialize, () => ({ protocolVersion: acp.PROTOCOL_VERSION, agentCapabilities: { loadSession: false }, authMethods: [] }))
    .onRequest(acp.methods.agent.session.new, () => ({ sessionId: 'session-1' }))
    .onRequest(acp.methods.agent.session.prompt, async ({ client }) => {
      for (const l of lines) {
        if (l.method === 'session/update') await client.notify(acp.methods.client.session.update, l.params as never);
        else if (l.method === 'session/request_permission') await client.request(acp.methods.client.session.requestPermission, l.params as never);
        else if (l.error !== undefined) throw new acp.RequestError(l.error.code, l.error.message);
        else return l.result as never;
      }
      throw new acp.RequestError(-32603, 'no response');
    });
  const consoleError = console.error;
  console.error = (...args: unknown[]) => void problems.push(`the client repaired or dropped a message: ${args.map(String).join(' ').slice(0, 200)}`);
  try {
    void agentApp.connect(acp.ndJsonStream(toClient.writable, toAgent.readable));
    await acp
      .client({ name: 'awaken-judge-client' })
      .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
        permissions++;
        return { outcome: { outcome: 'selected', optionId: (params.options[0] as { optionId: string }).optionId } };
      })
      .onNotification(acp.methods.client.session.update, ({ params }) => void updates.push(params.update as AcpVerdict['updates'][number]))
      .connectWith(acp.ndJsonStream(toAgent.writable, toClient.readable), async (agent) => {
        await agent.request(acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
        });
        const session = await agent.request(acp.methods.agent.session.new, { cwd: '/', mcpServers: [] });
        try {
          stopReason = (await agent.request(acp.methods.agent.session.prompt, { sessionId: session.sessionId, prompt: [{ type: 'text', text: 'go' }] }))
            .stopReason;
        } catch (e) {
          error = e instanceof Error ? e.message : String((e as { message?: unknown }).message ?? e);
        }
      });
  } catch (e) {
    problems.push(`the official client fails: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    console.error = consoleError;
  }
  findings.push(...problems.map((p) => finding('client', p)));
  return { updates, permissions, stopReason, error, findings, problems: findings.map(describeFinding), tools };
}

/** The turns of one session (the agent's side of each `session/prompt`, in order). */
export async function judgeAcpTurns(
  bodies: readonly string[],
  requestIds: readonly (number | string)[] = [],
): Promise<{ readonly findings: Finding[]; readonly frames: number[] }> {
  const findings: Finding[] = [];
  const frames: number[] = [];
  const mentions: ToolMention[][] = [];
  const sessions = new Set<string>();
  for (const [i, body] of bodies.entries()) {
    const v = await judgeAcp(body, requestIds[i] ?? 1);
    findings.push(...v.findings.map((f) => ({ ...f, turn: i + 1 })));
    frames.push(ndjsonFrames(body).length);
    mentions.push(v.tools);
    for (const line of ndjsonFrames(body)) {
      let id: unknown;
      try {
        id = (JSON.parse(line.text) as { params?: { sessionId?: unknown } } | null)?.params?.sessionId;
      } catch {
        continue;
      }
      if (typeof id === 'string') sessions.add(id);
    }
  }
  if (sessions.size > 1) findings.push(finding('multi-turn', `the turns name ${sessions.size} sessions (${[...sessions].join(', ')}), not one`));
  findings.push(...multiTurnFindings(mentions));
  return { findings, frames };
}
