import { createRequire } from 'node:module';
import * as acp from '@agentclientprotocol/sdk';
import { Ajv2020 } from 'ajv/dist/2020.js';

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
  readonly problems: string[];
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
  const problems: string[] = [];
  const v = validators();
  const lines: Line[] = [];
  const raw = body.split('\n');
  if (raw.at(-1) !== '') problems.push('the body does not end with a newline');
  raw.filter((l) => l !== '').forEach((text, i) => {
    let m: Line & { jsonrpc?: unknown };
    try {
      m = JSON.parse(text) as Line & { jsonrpc?: unknown };
    } catch {
      problems.push(`line ${i + 1} is not JSON`);
      return;
    }
    if (m.jsonrpc !== '2.0') problems.push(`line ${i + 1}: jsonrpc is not "2.0"`);
    const check = (name: string, validate: Validate, value: unknown): void => {
      if (!validate(value)) problems.push(`line ${i + 1}: ${name} rejects it: ${JSON.stringify(validate.errors).slice(0, 300)}`);
    };
    if (m.method === 'session/update') check('SessionNotification', v.notification, m.params);
    else if (m.method === 'session/request_permission') {
      if (m.id === undefined) problems.push(`line ${i + 1}: a permission request without an id`);
      check('RequestPermissionRequest', v.permission, m.params);
    } else if (m.method !== undefined) problems.push(`line ${i + 1}: unexpected method ${m.method}`);
    else {
      if (m.id !== requestId) problems.push(`line ${i + 1}: a response to ${JSON.stringify(m.id)}, not ${JSON.stringify(requestId)}`);
      if (m.error === undefined) check('PromptResponse', v.response, m.result);
      else if (typeof m.error.code !== 'number' || typeof m.error.message !== 'string') problems.push(`line ${i + 1}: a malformed error`);
    }
    lines.push(m);
  });
  const responses = lines.filter((l) => l.method === undefined);
  if (responses.length !== 1) problems.push(`${responses.length} responses, not exactly one`);
  else if (lines.at(-1) !== responses[0]) problems.push('the response is not the last message');

  const updates: AcpVerdict['updates'] = [];
  let permissions = 0;
  let stopReason: string | undefined;
  let error: string | undefined;
  if (problems.length > 0) return { updates, permissions, stopReason, error, problems };

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
        await agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } } });
        const session = await agent.request(acp.methods.agent.session.new, { cwd: '/', mcpServers: [] });
        try {
          stopReason = (await agent.request(acp.methods.agent.session.prompt, { sessionId: session.sessionId, prompt: [{ type: 'text', text: 'go' }] })).stopReason;
        } catch (e) {
          error = e instanceof Error ? e.message : String((e as { message?: unknown }).message ?? e);
        }
      });
  } catch (e) {
    problems.push(`the official client fails: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    console.error = consoleError;
  }
  return { updates, permissions, stopReason, error, problems };
}
