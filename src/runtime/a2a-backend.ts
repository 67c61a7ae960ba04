import type { RemoteEndpoint } from '../contract/agent-spec.ts';
import type { JsonValue } from '../contract/json.ts';
import type { Suspension } from '../contract/tool.ts';
import type { DelegateBackend, DelegateChild, DelegateOutcome, DelegateRequest } from './delegation.ts';
import type { Env } from './env.ts';
import { operatorOutbound, originOf } from './outbound.ts';

/**
 * The A2A delegation backend (book: 远程 Agent 委托 → A2aBackend): a remote agent is a task of
 * another server, driven through `@a2a-js/sdk`'s client (loaded when a remote delegation first runs;
 * an optional peer dependency). The prompt is sent with `message:stream` when the card says the agent
 * streams (else `message:send`, and the task polled every `options.poll_interval_ms`); its artifact
 * text is the child's text, its final state the outcome. `INPUT_REQUIRED` and `AUTH_REQUIRED`
 * suspend the parent's call; the decision is answered with a message on the task (its result as a
 * data part; a cancel as `{"approved": false}`). A stream that drops is resubscribed once, then the
 * task is polled; past `timeout_ms` the task is cancelled. The parent's cancel cancels the task.
 *
 * `endpoint`: `base_url` (the server's A2A root, e.g. `http://host/v1/a2a`), `target` (the agent's
 * path segment there; none: `base_url` is the agent's own), `auth` (`{type: "bearer", token}` or
 * `{type: "bearer", token_env}`), `timeout_ms`, `options.poll_interval_ms` (default 1000),
 * `options.stream` (default: what the card says).
 */

const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);
const WAITING = new Set(['TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED']);

/** The headers an endpoint's `auth` asks for. */
export function remoteAuthHeaders(endpoint: RemoteEndpoint, processEnv: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const auth = endpoint.auth;
  if (auth === undefined) return {};
  if (auth.type !== 'bearer') throw new Error(`endpoint auth type '${auth.type}' is not supported (bearer)`);
  const token = typeof auth['token'] === 'string' ? auth['token'] : typeof auth['token_env'] === 'string' ? processEnv[auth['token_env']] : undefined;
  if (token === undefined || token === '')
    throw new Error(`endpoint auth: ${typeof auth['token_env'] === 'string' ? `${auth['token_env']} is not set` : 'a bearer needs token or token_env'}`);
  return { authorization: `Bearer ${token}` };
}

interface Sdk {
  readonly Message: typeof import('@a2a-js/sdk').Message;
  readonly TaskState: typeof import('@a2a-js/sdk').TaskState;
  readonly client: typeof import('@a2a-js/sdk/client');
}

async function loadSdk(): Promise<Sdk> {
  try {
    const [core, client] = await Promise.all([import('@a2a-js/sdk'), import('@a2a-js/sdk/client')]);
    return { Message: core.Message, TaskState: core.TaskState, client };
  } catch (e) {
    throw new Error(
      `remote delegation over A2A needs the package @a2a-js/sdk (npm install @a2a-js/sdk@1.3.0): ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`,
    );
  }
}

type Client = Awaited<ReturnType<InstanceType<Sdk['client']['ClientFactory']>['createFromUrl']>>;
type StreamResponse = import('@a2a-js/sdk').StreamResponse;
type Task = import('@a2a-js/sdk').Task;

/**
 * The agent's A2A URL an endpoint names: `base_url/target`, or `base_url` itself without a target.
 * The SDK resolves the card (`.well-known/agent-card.json`) relative to the URL it is given, so the
 * client is made from this URL with a trailing slash: without one, `…/v1/a2a/analyst` would resolve
 * to the A2A root's card (the server's default agent) and `…/v1/a2a` to `/v1/.well-known/…`.
 */
export function agentUrlOf(endpoint: Pick<RemoteEndpoint, 'base_url' | 'target'>): string {
  const base = endpoint.base_url.replace(/\/+$/, '');
  return endpoint.target === undefined || endpoint.target === '' ? base : `${base}/${encodeURIComponent(endpoint.target)}`;
}

export interface A2aBackendOptions {
  /** What every request goes through (default: the operator's outbound guard; `awaken serve` gives its own). */
  readonly fetch?: typeof fetch;
}

export function a2aBackend(endpoint: RemoteEndpoint, env: Env, options: A2aBackendOptions = {}): DelegateBackend {
  const url = agentUrlOf(endpoint);
  const through = options.fetch ?? operatorOutbound.fetch;
  // The credential goes to the origin the endpoint names, never to another host the remote's card
  // advertises (a card is the remote's word, and may name any URL).
  const home = originOf(url);
  const pollMs = typeof endpoint.options['poll_interval_ms'] === 'number' ? Math.max(10, endpoint.options['poll_interval_ms']) : 1000;
  let connected: Promise<{ sdk: Sdk; client: Client; streams: boolean }> | undefined;
  const connect = (): Promise<{ sdk: Sdk; client: Client; streams: boolean }> =>
    (connected ??= (async () => {
      const sdk = await loadSdk();
      const headers = remoteAuthHeaders(endpoint);
      const fetchImpl: typeof fetch = (input, init) => {
        const target = originOf(input instanceof Request ? input.url : String(input));
        if (target === undefined || target !== home) return through(input, init);
        const h = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
        for (const [k, v] of Object.entries(headers)) h.set(k, v);
        return through(input, { ...init, headers: h });
      };
      const { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, RestTransportFactory, JsonRpcTransportFactory } = sdk.client;
      const factory = new ClientFactory(
        ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
          transports: [new RestTransportFactory({ fetchImpl }), new JsonRpcTransportFactory({ fetchImpl })],
          cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
        }),
      );
      const client = await factory.createFromUrl(`${url}/`);
      const card = await client.getAgentCard();
      const asked = endpoint.options['stream'];
      return { sdk, client, streams: typeof asked === 'boolean' ? asked : card.capabilities?.streaming === true };
    })().catch((e: unknown) => {
      connected = undefined;
      throw e;
    }));

  return {
    run: async (request) => {
      let c: Awaited<ReturnType<typeof connect>>;
      try {
        c = await connect();
      } catch (e) {
        return { status: 'failed', code: 'remote_unavailable', message: `the A2A agent at ${url} cannot be reached: ${reasonOf(e)}`, steps: 0 };
      }
      return new RemoteRun(c.sdk, c.client, c.streams, request, endpoint, env, pollMs, url).go();
    },
  };
}

const reasonOf = (e: unknown): string => (e instanceof Error ? (e.message.split('\n')[0] ?? e.name) : String(e));

/** One delegation to a remote agent: the task, followed to its end or to where it waits. */
class RemoteRun {
  readonly #sdk: Sdk;
  readonly #client: Client;
  readonly #streams: boolean;
  readonly #r: DelegateRequest;
  readonly #endpoint: RemoteEndpoint;
  readonly #env: Env;
  readonly #pollMs: number;
  readonly #url: string;
  #taskId: string | undefined;
  #contextId: string | undefined;
  #text = '';
  #announced = false;
  readonly #deadline: number;

  constructor(sdk: Sdk, client: Client, streams: boolean, request: DelegateRequest, endpoint: RemoteEndpoint, env: Env, pollMs: number, url: string) {
    this.#sdk = sdk;
    this.#client = client;
    this.#streams = streams;
    this.#r = request;
    this.#endpoint = endpoint;
    this.#env = env;
    this.#pollMs = pollMs;
    this.#url = url;
    this.#deadline = env.clock.now() + endpoint.timeout_ms;
    if (request.resume !== undefined) {
      this.#taskId = request.resume.child.run_id;
      this.#contextId = request.resume.child.thread_id;
    }
  }

  #child(): DelegateChild {
    return { agent_id: this.#r.agentId, backend: 'a2a', thread_id: this.#contextId ?? '', run_id: this.#taskId ?? '', depth: this.#r.resume?.child.depth ?? 1 };
  }

  /** The message to send: the prompt, or the answer to what the task waits on. */
  #message(): unknown {
    const r = this.#r;
    const resume = r.resume;
    if (resume === undefined) {
      return this.#sdk.Message.fromJSON({ messageId: `${r.parent.runId}:${r.parent.callId}`, role: 'ROLE_USER', parts: [{ text: r.prompt }] });
    }
    const d = resume.decision;
    const answer: JsonValue =
      d.action === 'cancel'
        ? { approved: false, ...(d.reason !== undefined ? { reason: d.reason } : {}) }
        : d.result === undefined
          ? { approved: true }
          : d.result;
    const part = typeof answer === 'object' && answer !== null ? { data: answer } : { text: typeof answer === 'string' ? answer : JSON.stringify(answer) };
    return this.#sdk.Message.fromJSON({
      messageId: `${r.parent.runId}:${r.parent.callId}:${d.decision_id !== '' ? d.decision_id : d.updated_at}`,
      role: 'ROLE_USER',
      taskId: resume.child.run_id,
      contextId: resume.child.thread_id,
      parts: [part],
    });
  }

  async go(): Promise<DelegateOutcome> {
    const signal = this.#r.signal;
    const timeout = AbortSignal.timeout(Math.max(1, this.#deadline - this.#env.clock.now()));
    const both = AbortSignal.any([signal, timeout]);
    try {
      let last: Task | undefined;
      if (this.#streams) {
        last = await this.#follow(this.#client.sendMessageStream({ message: this.#message(), tenant: '' } as never, { signal: both }));
        // A stream that ended without a final state (a dropped connection): resubscribe once, then poll.
        if (!this.#settled(last) && this.#taskId !== undefined) {
          try {
            last = await this.#follow(this.#client.resubscribeTask({ id: this.#taskId, tenant: '' }, { signal: both }));
          } catch {
            // Polled below.
          }
        }
      } else {
        const sent = await this.#client.sendMessage({ message: this.#message(), tenant: '', configuration: { returnImmediately: true } } as never, {
          signal: both,
        });
        // The answer is a task, or a message: no task, which is refused below.
        if ('id' in (sent as object) && 'status' in (sent as object)) {
          last = sent as Task;
          await this.#seeTask(last);
        }
      }
      while (!this.#settled(last)) {
        if (this.#taskId === undefined)
          return { status: 'failed', child: this.#child(), message: `the A2A agent at ${this.#url} answered without a task`, steps: 0 };
        await this.#env.sleep(this.#pollMs, both);
        last = await this.#client.getTask({ id: this.#taskId, tenant: '' } as never, { signal: both });
        await this.#seeTask(last);
      }
      return this.#outcomeOf(last as Task);
    } catch (e) {
      if (signal.aborted || timeout.aborted) {
        await this.#cancelTask();
        return signal.aborted
          ? { status: 'cancelled', child: this.#child(), message: 'the parent run was cancelled', response: this.#text, steps: 0 }
          : {
              status: 'timeout',
              child: this.#child(),
              message: `no answer within ${this.#endpoint.timeout_ms} ms (timeout_ms)`,
              response: this.#text,
              steps: 0,
            };
      }
      return {
        status: 'failed',
        child: this.#child(),
        code: 'remote_error',
        message: `the A2A agent at ${this.#url}: ${reasonOf(e)}`,
        response: this.#text,
        steps: 0,
      };
    }
  }

  async #cancelTask(): Promise<void> {
    if (this.#taskId === undefined) return;
    try {
      await this.#client.cancelTask({ id: this.#taskId, tenant: '', metadata: undefined }, { signal: AbortSignal.timeout(5_000) });
    } catch {
      // Best effort: the task may have ended, or the server be gone.
    }
  }

  #stateOf(task: Task | undefined): string {
    return task === undefined ? '' : (this.#sdk.TaskState[task.status?.state ?? 0] ?? '');
  }

  #settled(task: Task | undefined): boolean {
    const s = this.#stateOf(task);
    return TERMINAL.has(s) || WAITING.has(s);
  }

  /** Reads a stream: the task's ids, its artifact text as the child's text, its latest state. */
  async #follow(stream: AsyncGenerator<StreamResponse>): Promise<Task | undefined> {
    let task: Task | undefined;
    for await (const frame of stream) {
      const p = frame.payload;
      if (p === undefined) continue;
      if (p.$case === 'task') {
        task = p.value;
        await this.#seeTask(p.value, false);
      } else if (p.$case === 'statusUpdate') {
        await this.#ids(p.value.taskId, p.value.contextId);
        task = {
          ...(task ?? ({ id: p.value.taskId, contextId: p.value.contextId, artifacts: [], history: [] } as unknown as Task)),
          status: p.value.status,
        } as Task;
      } else if (p.$case === 'artifactUpdate') {
        await this.#ids(p.value.taskId, p.value.contextId);
        const text = textOf(p.value.artifact?.parts ?? []);
        if (text !== '') {
          this.#text += text;
          await this.#r.onEvent({ event_type: 'text_delta', delta: text });
        }
      } else if (p.$case === 'message') {
        const text = textOf(p.value.parts);
        if (text !== '') {
          this.#text += text;
          await this.#r.onEvent({ event_type: 'text_delta', delta: text });
        }
        // A direct message answer: the agent made no task.
        return {
          id: this.#taskId ?? '',
          contextId: p.value.contextId,
          status: { state: this.#sdk.TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined },
          artifacts: [],
          history: [],
          metadata: undefined,
        } as Task;
      }
    }
    return task;
  }

  async #ids(taskId: string, contextId: string): Promise<void> {
    if (taskId !== '') this.#taskId = taskId;
    if (contextId !== '') this.#contextId = contextId;
    if (!this.#announced && this.#taskId !== undefined) {
      this.#announced = true;
      await this.#r.onEvent({ event_type: 'run_start', thread_id: this.#contextId ?? '', run_id: this.#taskId });
    }
  }

  /** A task snapshot: its ids, and (polled) the artifact text not seen yet. */
  async #seeTask(task: Task, withText = true): Promise<void> {
    await this.#ids(task.id, task.contextId);
    if (!withText) return;
    const all = (task.artifacts ?? []).map((a) => textOf(a.parts)).join('');
    if (all.length > this.#text.length && all.startsWith(this.#text)) {
      const delta = all.slice(this.#text.length);
      this.#text = all;
      await this.#r.onEvent({ event_type: 'text_delta', delta });
    }
  }

  #outcomeOf(task: Task): DelegateOutcome {
    const state = this.#stateOf(task);
    const said = textOf(task.status?.message?.parts ?? []);
    const child = this.#child();
    if (WAITING.has(state)) {
      const auth = state === 'TASK_STATE_AUTH_REQUIRED';
      const data = dataOf(task.status?.message?.parts ?? []);
      const suspension: Suspension = {
        id: child.run_id,
        action: auth ? 'a2a:auth_required' : 'a2a:input_required',
        message: said !== '' ? said : auth ? 'the remote agent needs authentication' : 'the remote agent needs input',
        ...(data !== undefined ? { parameters: data } : {}),
      };
      return { status: 'suspended', child, targetId: child.run_id, suspension, steps: 0 };
    }
    const response = this.#text !== '' ? this.#text : said;
    if (state === 'TASK_STATE_COMPLETED') return { status: 'completed', child, response, steps: 0 };
    if (state === 'TASK_STATE_CANCELED')
      return { status: 'cancelled', child, message: said !== '' ? said : 'the remote task was cancelled', response, steps: 0 };
    return {
      status: 'failed',
      child,
      message: said !== '' ? said : `the remote task ended ${state.replace('TASK_STATE_', '').toLowerCase()}`,
      response,
      steps: 0,
    };
  }
}

type Parts = readonly import('@a2a-js/sdk').Part[];
const textOf = (parts: Parts): string => parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
const dataOf = (parts: Parts): JsonValue | undefined => {
  const d = parts.find((p) => p.content?.$case === 'data');
  return d?.content?.$case === 'data' ? (d.content.value as JsonValue) : undefined;
};
