import { AbstractChat, createIdGenerator, DefaultChatTransport, getToolName, isToolUIPart, type ChatState, type ChatStatus, type UIMessage } from 'ai';
import { A2UI_OPERATIONS_KEY, A2UI_SURFACE_ACTIVITY } from '../../src/contract/a2ui.ts';
import { drawSurfaces, operationsOf, surfaceIdsOf } from './a2ui.ts';
import { el, pretty } from './dom.ts';
import { hrefOf } from './route.ts';
import './chat.css';

/**
 * The studio's chat panel: talk to one of the server's agents through its AI SDK v6 route
 * (`POST /v1/ai-sdk/chat`) with the AI SDK's own client (`AbstractChat` and
 * `DefaultChatTransport`), so the panel behaves as any `useChat` page would. The answer streams in
 * as chat: text, reasoning (folded), tool calls with their arguments, progress and results, an
 * A2UI v0.9 surface drawn (./a2ui.ts; a click in it is the next user message) with its JSON folded
 * beside it (in a reopened thread, whose history has no activity, drawn from the `render_a2ui`
 * call's result), other activity as its JSON, folded. A call the run waits on is answered here
 * (approve, deny, or a JSON payload for a tool that takes the answer as its result); a run is
 * cancelled on the server (`POST /v1/runs/:id/cancel`) and its stream dropped. Every node is built
 * with the DOM (text is text, never HTML); the page's CSP allows no inline script or style.
 *
 * Over 500 lines as one module: the client, the drawing and the answers share the panel's state
 * (the chat, the nodes drawn, the payloads being written, what was folded).
 */

export interface ChatDeps {
  /** fetch against the server's origin with the bearer token; throws on non-2xx (an Error whose message names the path, status and server error). Returns the Response (body unread) on success. */
  api(path: string, init?: RequestInit): Promise<Response>;
  /** Called when a run started from the panel ends (any termination), so the studio can refresh the thread and offer its timeline. */
  onRunFinished?(threadId: string, runId: string | undefined): void;
  /** Called when the panel switches to a thread (new or opened), so the studio can put it in the URL. */
  onThread?(threadId: string): void;
}
export interface ChatPanel {
  openThread(threadId: string): Promise<void>;
  newThread(): void;
}

type Part = UIMessage['parts'][number];

/** A link the stream names is followed only to the web: another scheme (`data:`, `file:`) is shown as text. */
const webUrl = (url: string): boolean => {
  try {
    const { protocol } = new URL(url);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
};
type ToolPart = Extract<Part, { toolCallId: string }>;
type DataPart = Extract<Part, { type: `data-${string}` }>;

/** What a waiting call's ticket says (from the run's state snapshot): its question, and whether the answer is the call's result. */
interface Ticket {
  readonly message?: string;
  readonly responseSchema?: unknown;
  readonly takesPayload: boolean;
}

const enc = encodeURIComponent;
const newThreadId = createIdGenerator({ prefix: 'chat', separator: '-', size: 16 });
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const busy = (s: ChatStatus): boolean => s === 'submitted' || s === 'streaming';

/** What `useChat` keeps in framework state, kept in a plain object that asks the panel to draw again on every change. */
class PanelState implements ChatState<UIMessage> {
  #status: ChatStatus = 'ready';
  #error: Error | undefined;
  #messages: UIMessage[];
  constructor(
    messages: UIMessage[],
    private readonly changed: () => void,
  ) {
    this.#messages = messages;
  }
  get status(): ChatStatus {
    return this.#status;
  }
  set status(s: ChatStatus) {
    this.#status = s;
    this.changed();
  }
  get error(): Error | undefined {
    return this.#error;
  }
  set error(e: Error | undefined) {
    this.#error = e;
    this.changed();
  }
  get messages(): UIMessage[] {
    return this.#messages;
  }
  set messages(m: UIMessage[]) {
    this.#messages = m;
    this.changed();
  }
  pushMessage = (m: UIMessage): void => {
    // A resumed run continues the assistant message that asked (the client's copy of it), under the
    // run's id: when that message came from the thread's history (under its step's id), the
    // continuation takes its place rather than showing the call twice.
    const last = this.#messages.at(-1);
    const calls = (x: UIMessage): string[] => x.parts.flatMap((p) => ('toolCallId' in p ? [p.toolCallId] : []));
    if (last?.role === 'assistant' && m.role === 'assistant' && calls(last).length > 0 && calls(last).every((id) => calls(m).includes(id))) {
      this.replaceMessage(this.#messages.length - 1, m);
      return;
    }
    this.messages = [...this.#messages, m];
  };
  popMessage = (): void => {
    this.messages = this.#messages.slice(0, -1);
  };
  replaceMessage = (i: number, m: UIMessage): void => {
    this.messages = this.#messages.map((x, j) => (j === i ? m : x));
  };
  snapshot = <T>(x: T): T => structuredClone(x);
}

class PanelChat extends AbstractChat<UIMessage> {
  get panelState(): PanelState {
    return this.state as PanelState;
  }
}

/** The run a streamed assistant message belongs to (the server's `data-run-info` part). */
function runOf(message: UIMessage): string | undefined {
  for (let i = message.parts.length - 1; i >= 0; i--) {
    const p = message.parts[i] as Part;
    if (p.type === 'data-run-info' && isObject((p as DataPart).data)) {
      const id = ((p as DataPart).data as Record<string, unknown>)['runId'];
      if (typeof id === 'string') return id;
    }
  }
  return undefined;
}

/** The tickets of the calls a message's run waits on, by call id, from its last state snapshot. */
function ticketsOf(message: UIMessage): Map<string, Ticket> {
  const tickets = new Map<string, Ticket>();
  const snapshot = [...message.parts].reverse().find((p) => p.type === 'data-state-snapshot') as DataPart | undefined;
  const ext = isObject(snapshot?.data) ? snapshot.data['extensions'] : undefined;
  const batch = isObject(ext) ? ext['__runtime.tool_batch'] : undefined;
  const results = isObject(batch) ? batch['results'] : undefined;
  if (!isObject(results)) return tickets;
  for (const [callId, r] of Object.entries(results)) {
    const ticket = isObject(r) ? r['suspension'] : undefined;
    const su = isObject(ticket) ? ticket['suspension'] : undefined;
    if (!isObject(ticket) || !isObject(su)) continue;
    const mode = ticket['resume_mode'];
    tickets.set(callId, {
      ...(typeof su['message'] === 'string' ? { message: su['message'] } : {}),
      ...(su['response_schema'] !== undefined ? { responseSchema: su['response_schema'] } : {}),
      takesPayload: su['response_schema'] !== undefined || mode === 'use_decision_as_tool_result' || mode === 'pass_decision_to_tool',
    });
  }
  return tickets;
}

/** A tool call's progress reports (`tool-call-progress` activity), by call id. */
function progressOf(message: UIMessage): Map<string, { status: string; message?: string; progress?: number }> {
  const out = new Map<string, { status: string; message?: string; progress?: number }>();
  for (const p of message.parts) {
    if (p.type !== 'data-activity-snapshot' || !isObject((p as DataPart).data)) continue;
    const d = (p as DataPart).data as Record<string, unknown>;
    const c = d['content'];
    if (d['activityType'] !== 'tool-call-progress' || typeof d['messageId'] !== 'string' || !isObject(c)) continue;
    out.set(d['messageId'], {
      status: typeof c['status'] === 'string' ? c['status'] : '',
      ...(typeof c['message'] === 'string' ? { message: c['message'] } : {}),
      ...(typeof c['progress'] === 'number' ? { progress: c['progress'] } : {}),
    });
  }
  return out;
}

/**
 * The operations a `render_a2ui` call's result carries (`{a2ui_operations, rendered}`, or that as
 * `data` beside the result's metadata), once the call is done.
 */
function surfaceOfResult(p: ToolPart): unknown[] | undefined {
  if (getToolName(p) !== 'render_a2ui' || p.state !== 'output-available' || p.preliminary === true) return undefined;
  const out = p.output;
  const data = isObject(out) && isObject(out['data']) && !(A2UI_OPERATIONS_KEY in out) ? out['data'] : out;
  const ops = isObject(data) ? data[A2UI_OPERATIONS_KEY] : undefined;
  return Array.isArray(ops) ? ops : undefined;
}

/** What a call's drawn surfaces are named: `A2UI surface <ids> from <call>`. */
const surfaceLabel = (operations: readonly unknown[], from: string): string =>
  `A2UI surface ${surfaceIdsOf(operations).join(', ')} from ${from}`.replace(/ +/g, ' ').trim();

/** Only what the server reads goes back to it: the data parts (state snapshots, run info) stay in the page. */
const forServer = (messages: readonly UIMessage[]): UIMessage[] =>
  messages.map((m) => ({ ...m, parts: m.parts.filter((p) => !p.type.startsWith('data-') && p.type !== 'reasoning') }));

const STATE_LABEL: Record<ToolPart['state'], string> = {
  'input-streaming': 'receiving its arguments…',
  'input-available': 'running…',
  'approval-requested': 'waiting for your answer',
  'approval-responded': 'answered, sending…',
  'output-available': 'done',
  'output-error': 'failed',
  'output-denied': 'denied',
};

export function mountChat(root: HTMLElement, deps: ChatDeps): ChatPanel {
  const agentPick = el('select', { id: 'chat-agent', name: 'agent' });
  const threadName = el('code', { class: 'chat-thread-id' });
  const newButton = el('button', { type: 'button', id: 'chat-new' }, 'New thread');
  const log = el('div', { id: 'chat-log', class: 'chat-log', role: 'log', 'aria-live': 'polite', 'aria-label': 'Conversation', tabindex: 0 });
  const statusLine = el('p', { id: 'chat-status', class: 'note', role: 'status' });
  const errorLine = el('p', { id: 'chat-error', class: 'chat-error', role: 'alert' });
  const input = el('textarea', { id: 'chat-input', name: 'message', rows: 3, 'aria-describedby': 'chat-hint' });
  const send = el('button', { type: 'submit', id: 'chat-send' }, 'Send');
  const cancel = el('button', { type: 'button', id: 'chat-cancel', disabled: true }, 'Cancel run');
  const form = el(
    'form',
    { class: 'chat-form', 'aria-label': 'Send a message' },
    el('label', { for: 'chat-input' }, 'Message'),
    input,
    el('p', { id: 'chat-hint', class: 'note' }, 'Enter sends, Shift+Enter starts a new line.'),
    el('div', { class: 'chat-actions' }, send, cancel),
  );
  root.replaceChildren(
    el(
      'section',
      { class: 'chat', 'aria-labelledby': 'chat-title' },
      el('h2', { id: 'chat-title' }, 'Chat'),
      el('div', { class: 'chat-bar' }, el('label', { for: 'chat-agent' }, 'Agent'), agentPick, el('span', { class: 'note' }, 'Thread ', threadName), newButton),
      log,
      statusLine,
      errorLine,
      form,
    ),
  );

  let chat!: PanelChat;
  /** Whether the thread was shown to the studio (a new one is, once its first message is sent). */
  let announced = false;
  /** The run the current request streams (its `x-awaken-run-id` header, then its run info). */
  let currentRun: string | undefined;
  /** Folded blocks the reader opened or closed, kept when a message is drawn again. */
  const folded = new Map<string, boolean>();
  /** Payloads being written, kept when a message is drawn again. */
  const drafts = new Map<string, string>();
  const drawn = new Map<string, { message: UIMessage; node: HTMLElement; settled: boolean }>();
  /** Surfaces drawn, by activity and operations: a message drawn again keeps them, and what was typed into them. */
  const surfaces = new Map<string, { operations: string; node: HTMLElement }>();
  let pending = false;

  const say = (text: string): void => {
    statusLine.textContent = text;
  };
  const fail = (e: unknown): void => {
    errorLine.textContent = e instanceof Error ? e.message : String(e);
  };

  // ---- the AI SDK client ------------------------------------------------------------------------

  const transport = new DefaultChatTransport<UIMessage>({
    api: '/v1/ai-sdk/chat',
    // The studio's API call: the bearer token, and a failure that names the path and the server's error.
    fetch: async (url, init) => {
      const response = await deps.api(String(url), init);
      const run = response.headers.get('x-awaken-run-id');
      if (run !== null) currentRun = run;
      return response;
    },
    prepareSendMessagesRequest: ({ id, messages, trigger, messageId }) => ({
      body: { id, messages: forServer(messages), trigger, messageId, ...(agentPick.value !== '' ? { agentId: agentPick.value } : {}) },
    }),
  });

  /** Once every call the run waits on is answered (approved, denied or given a payload), the chat sends the answers. */
  const answered = ({ messages }: { messages: UIMessage[] }): boolean => {
    const last = messages.at(-1);
    if (last?.role !== 'assistant') return false;
    const lastStep = last.parts.map((p) => p.type).lastIndexOf('step-start');
    const calls = last.parts.slice(lastStep + 1).filter(isToolUIPart);
    return (
      calls.some((p) => p.state === 'approval-responded' || answeredByPayload.has(p.toolCallId)) &&
      calls.every(
        (p) =>
          p.state === 'approval-responded' ||
          p.state === 'output-denied' ||
          p.state === 'output-error' ||
          (p.state === 'output-available' && p.preliminary !== true),
      )
    );
  };
  /** Calls answered with a payload and not sent yet. */
  const answeredByPayload = new Set<string>();

  function makeChat(threadId: string, messages: UIMessage[]): PanelChat {
    void chat?.stop();
    drawn.clear();
    surfaces.clear();
    // What was folded, drafted or answered belongs to the thread shown: a call id may come again in another.
    folded.clear();
    drafts.clear();
    answeredByPayload.clear();
    log.replaceChildren();
    currentRun = undefined;
    threadName.textContent = threadId;
    const state = new PanelState(messages, schedule);
    const made: PanelChat = new PanelChat({
      id: threadId,
      state,
      transport,
      sendAutomaticallyWhen: (o) => {
        const send = answered(o);
        if (send) answeredByPayload.clear();
        return send;
      },
      onData: (part) => {
        if (chat !== made) return;
        if (part.type === 'data-run-info' && isObject(part.data) && typeof part.data['runId'] === 'string') currentRun = part.data['runId'];
      },
      onFinish: ({ message, isAbort, isError, finishReason }) => {
        if (chat !== made) return;
        const run = runOf(message) ?? currentRun;
        const how = isAbort ? 'cancelled' : isError ? 'ended with an error' : finishReason === 'tool-calls' ? 'waits for your answer' : 'finished';
        say(`Run ${run ?? ''} ${how}.`);
        deps.onRunFinished?.(threadId, run);
      },
      onError: (e) => {
        if (chat === made) fail(e);
      },
    });
    chat = made;
    schedule();
    return made;
  }

  // ---- drawing ----------------------------------------------------------------------------------

  function schedule(): void {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      draw();
    });
  }

  function draw(): void {
    const status = chat.status;
    send.disabled = busy(status);
    cancel.disabled = !busy(status);
    if (chat.error !== undefined) fail(chat.error);
    const messages = chat.messages;
    const ids = new Set(messages.map((m) => m.id));
    for (const [id, d] of drawn) {
      if (!ids.has(id)) {
        d.node.remove();
        drawn.delete(id);
      }
    }
    // Only a message that changed is drawn again (the one streaming, the one answered): the others keep their nodes, and what the reader opened or typed in them.
    messages.forEach((m, i) => {
      const settled = i < messages.length - 1 || !busy(status);
      const old = drawn.get(m.id);
      let node = old?.node;
      let refocus: string | undefined;
      if (old === undefined || old.message !== m || old.settled !== settled) {
        node = renderMessage(m, settled);
        const active = document.activeElement;
        if (old !== undefined && active instanceof HTMLElement && old.node.contains(active))
          refocus = active.closest<HTMLElement>('[data-focus]')?.dataset['focus'] ?? '';
        old?.node.remove();
        drawn.set(m.id, { message: m, node, settled });
      }
      const at = log.children[i] ?? null;
      if (at !== node) log.insertBefore(node as HTMLElement, at);
      // Focus stays where the reader was: the same control drawn again, else its tool call, else the conversation.
      if (refocus !== undefined) {
        const key = refocus.split(' ')[0] ?? '';
        const again = [...(node as HTMLElement).querySelectorAll<HTMLElement>('[data-focus]')];
        (again.find((n) => n.dataset['focus'] === refocus) ?? again.find((n) => n.dataset['focus'] === key) ?? log).focus();
      }
    });
    // Announced once it is whole: a message drawn again per streamed piece would be read out again each time.
    log.setAttribute('aria-busy', String(busy(status)));
    if (messages.length === 0) say('Pick an agent and send a message.');
    else if (status === 'submitted') say('Sent; waiting for the answer…');
    else if (status === 'streaming') say(`Run ${currentRun ?? ''} is answering…`);
    log.scrollTop = log.scrollHeight;
  }

  /** A folded block whose open state survives a redraw. */
  function fold(key: string, summary: string, open: boolean, ...body: Node[]): HTMLDetailsElement {
    const d = el('details', { class: 'chat-fold', open: folded.get(key) ?? open }, el('summary', {}, summary), ...body);
    d.addEventListener('toggle', () => folded.set(key, d.open));
    return d;
  }

  function renderMessage(m: UIMessage, settled: boolean): HTMLElement {
    const who = m.role === 'user' ? 'You' : m.role === 'assistant' ? 'Assistant' : 'System';
    const node = el('article', { class: `chat-msg ${m.role}`, 'data-message-id': m.id, 'aria-label': `${who} said` }, el('h3', { class: 'chat-who' }, who));
    const tickets = ticketsOf(m);
    const progress = progressOf(m);
    const activity = new Map<string, unknown[]>();
    // The calls whose surface the stream sent as activity: drawn from that, not again from their result.
    const streamed = new Set(
      m.parts.flatMap((p) => {
        const d = p.type === 'data-activity-snapshot' ? (p as DataPart).data : undefined;
        return isObject(d) && d['activityType'] === A2UI_SURFACE_ACTIVITY && typeof d['messageId'] === 'string' ? [d['messageId']] : [];
      }),
    );
    m.parts.forEach((p, i) => {
      const key = `${m.id}:${i}`;
      if (p.type === 'text') node.append(el('p', { class: 'chat-text' }, p.text));
      else if (p.type === 'reasoning')
        node.append(fold(key, p.state === 'streaming' ? 'Reasoning…' : 'Reasoning', false, el('p', { class: 'chat-reasoning' }, p.text)));
      else if (isToolUIPart(p)) {
        node.append(renderTool(m, p, tickets.get(p.toolCallId), progress.get(p.toolCallId)));
        const fromResult = surfaceOfResult(p);
        // A thread's history has no activity parts: a call's surface comes back from its result.
        if (fromResult !== undefined && !streamed.has(p.toolCallId))
          node.append(surfaceSection(`${m.id}:${A2UI_SURFACE_ACTIVITY} ${p.toolCallId}`, fromResult, surfaceLabel(fromResult, p.toolCallId)));
      } else if (p.type === 'file') node.append(el('p', { class: 'note' }, `A file (${p.mediaType}${p.filename !== undefined ? `: ${p.filename}` : ''})`));
      else if (p.type === 'source-url')
        node.append(
          el(
            'p',
            { class: 'note' },
            'Source: ',
            webUrl(p.url) ? el('a', { href: p.url, rel: 'noreferrer' }, p.title ?? p.url) : `${p.title ?? ''} ${p.url}`.trim(),
          ),
        );
      else if (p.type === 'data-activity-snapshot' || p.type === 'data-activity-delta') {
        const d = (p as DataPart).data;
        const kind = isObject(d) && typeof d['activityType'] === 'string' ? d['activityType'] : 'activity';
        if (kind === 'tool-call-progress') return;
        const id = `${kind} ${isObject(d) && typeof d['messageId'] === 'string' ? d['messageId'] : ''}`;
        activity.set(id, [...(activity.get(id) ?? []), d]);
      }
    });
    // Activity is shown as the JSON it came as (its snapshot and updates, in order), folded; an A2UI v0.9 surface is drawn too, its JSON beside it.
    for (const [id, items] of activity) {
      const [kind, from] = id.split(' ');
      const operations = kind === A2UI_SURFACE_ACTIVITY ? operationsOf(items) : undefined;
      const what =
        operations !== undefined
          ? surfaceLabel(operations, from ?? '')
          : (kind === 'a2ui' ? `A2UI surface from ${from ?? ''}` : `${kind ?? ''} ${from ?? ''}`).replace(/ +/g, ' ').trim();
      const json = fold(
        `${m.id}:activity:${id}`,
        `${what} (JSON, ${items.length} update${items.length === 1 ? '' : 's'})`,
        false,
        el('pre', { class: 'chat-activity' }, pretty(items)),
      );
      if (operations === undefined) node.append(json);
      else node.append(surfaceSection(`${m.id}:${id}`, operations, what, json));
    }
    const run = m.role === 'assistant' ? runOf(m) : undefined;
    if (run !== undefined && settled) {
      node.append(el('p', { class: 'chat-run' }, el('a', { href: hrefOf({ view: 'runs', thread: chat.id, run }) }, `Timeline of run ${run}`)));
    }
    return node;
  }

  /** A call's drawn surfaces in a region of their own, named by `what`, with whatever goes beside them (their JSON). */
  function surfaceSection(key: string, operations: unknown[], what: string, ...beside: HTMLElement[]): HTMLElement {
    return el('section', { class: 'chat-a2ui', 'aria-label': what }, surfaceNode(key, operations), ...beside);
  }

  /** A call's surfaces, drawn once for the operations they came with. */
  function surfaceNode(key: string, operations: unknown[]): HTMLElement {
    const json = JSON.stringify(operations);
    const kept = surfaces.get(key);
    if (kept?.operations === json) return kept.node;
    const node = drawSurfaces(operations, (text) => void clicked(text).catch(fail));
    surfaces.set(key, { operations: json, node });
    return node;
  }

  function renderTool(
    m: UIMessage,
    p: ToolPart,
    ticket: Ticket | undefined,
    progress: { status: string; message?: string; progress?: number } | undefined,
  ): HTMLElement {
    const name = getToolName(p);
    const title = `${name} [${p.toolCallId}]`;
    const live = p.state === 'output-available' && p.preliminary === true;
    const section = el(
      'section',
      {
        class: `chat-tool ${p.state}`,
        'data-call-id': p.toolCallId,
        'data-state': p.state,
        'data-focus': p.toolCallId,
        tabindex: -1,
        'aria-label': `Tool call ${title}`,
      },
      el('h4', {}, title, ' · ', el('span', { class: 'chat-tool-state' }, live ? 'working…' : STATE_LABEL[p.state])),
    );
    if (p.input !== undefined && !(isObject(p.input) && Object.keys(p.input).length === 0 && p.state === 'input-streaming'))
      section.append(el('div', { class: 'chat-label' }, 'Arguments'), el('pre', { class: 'chat-args' }, pretty(p.input)));
    if (progress !== undefined) {
      const label = [progress.status, progress.message, progress.progress !== undefined ? `${Math.round(progress.progress * 100)}%` : undefined]
        .filter((x) => x !== undefined && x !== '')
        .join(' · ');
      section.append(
        el(
          'p',
          { class: 'chat-progress' },
          progress.progress !== undefined ? el('progress', { max: 1, value: progress.progress, 'aria-label': `Progress of ${name}` }) : null,
          ' ',
          label,
        ),
      );
    }
    if (p.state === 'output-available')
      section.append(
        el('div', { class: 'chat-label' }, live ? 'Output so far' : 'Result'),
        el('pre', { class: 'chat-output' }, typeof p.output === 'string' ? p.output : pretty(p.output)),
      );
    if (p.state === 'output-error') section.append(el('p', { class: 'chat-bad' }, p.errorText));
    if (p.state === 'output-denied')
      section.append(el('p', { class: 'chat-bad' }, 'Denied', p.approval?.reason !== undefined ? `: ${p.approval.reason}` : '.'));
    if (p.state === 'approval-responded') section.append(el('p', { class: 'note' }, p.approval.approved ? 'Approved.' : 'Denied.'));
    if (p.state === 'approval-requested') section.append(renderAsk(m, p, name, ticket));
    return section;
  }

  /** The answers to a call the run waits on: approve, deny, or (for a tool that takes it as its result) a JSON payload. */
  function renderAsk(m: UIMessage, p: Extract<ToolPart, { state: 'approval-requested' }>, name: string, ticket: Ticket | undefined): HTMLElement {
    const approvalId = p.approval.id;
    const approve = el('button', { type: 'button', class: 'chat-approve', 'data-focus': `${p.toolCallId} approve` }, 'Approve');
    const deny = el('button', { type: 'button', class: 'chat-deny', 'data-focus': `${p.toolCallId} deny` }, 'Deny');
    const answer = (approved: boolean): void => {
      errorLine.textContent = '';
      Promise.resolve(chat.addToolApprovalResponse({ id: approvalId, approved })).catch(fail);
    };
    approve.addEventListener('click', () => answer(true));
    deny.addEventListener('click', () => answer(false));
    const areaId = `chat-payload-${p.toolCallId}`;
    const area = el('textarea', { id: areaId, rows: 3, class: 'chat-payload', spellcheck: 'false', 'data-focus': `${p.toolCallId} payload` });
    area.value = drafts.get(p.toolCallId) ?? '{}';
    area.addEventListener('input', () => drafts.set(p.toolCallId, area.value));
    const problem = el('p', { class: 'chat-bad', role: 'alert' });
    const give = el('button', { type: 'button', 'data-focus': `${p.toolCallId} give` }, 'Send answer');
    give.addEventListener('click', () => {
      let output: unknown;
      try {
        output = JSON.parse(area.value);
      } catch (e) {
        problem.textContent = `The payload is not JSON: ${e instanceof Error ? e.message : String(e)}`;
        area.focus();
        return;
      }
      drafts.delete(p.toolCallId);
      answeredByPayload.add(p.toolCallId);
      Promise.resolve(chat.addToolOutput({ tool: name as never, toolCallId: p.toolCallId, output: output as never })).catch(fail);
    });
    const schema = ticket?.responseSchema !== undefined ? [el('div', { class: 'chat-label' }, 'It expects'), el('pre', {}, pretty(ticket.responseSchema))] : [];
    return el(
      'div',
      { class: 'chat-ask', role: 'group', 'aria-label': `Answer ${name} [${p.toolCallId}]` },
      ticket?.message !== undefined ? el('p', { class: 'chat-question' }, ticket.message) : null,
      el('div', { class: 'chat-actions' }, approve, deny),
      fold(
        `${m.id}:payload:${p.toolCallId}`,
        'Answer with a payload (JSON)',
        ticket?.takesPayload === true,
        ...schema,
        el('label', { for: areaId }, `Payload for ${name}`),
        area,
        give,
        problem,
      ),
    );
  }

  // ---- what the reader does -----------------------------------------------------------------------

  async function submit(): Promise<void> {
    const text = input.value.trim();
    if (text === '' || busy(chat.status)) return;
    errorLine.textContent = '';
    await agentsKnown();
    input.value = '';
    if (!announced) {
      announced = true;
      deps.onThread?.(chat.id);
    }
    currentRun = undefined;
    await chat.sendMessage({ text });
  }

  /** A click in a surface: the user's next message, worded as the AG-UI route words a client's `a2uiAction`. */
  async function clicked(text: string): Promise<void> {
    errorLine.textContent = '';
    if (busy(chat.status)) {
      errorLine.textContent = 'The run is still answering: click again once it has finished, or cancel it.';
      return;
    }
    currentRun = undefined;
    await chat.sendMessage({ text });
  }

  async function cancelRun(): Promise<void> {
    if (!busy(chat.status)) return;
    const target = currentRun ?? chat.id;
    say(`Cancelling run ${currentRun ?? `of ${chat.id}`}…`);
    // The run stops on the server (a run id, or the thread's id for a run whose id has not come yet); the stream is dropped at once.
    const cancelled = deps
      .api(`/v1/runs/${enc(target)}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } })
      .then((r) => r.body?.cancel())
      .catch((e: unknown) => {
        // A run that ended while the cancel was on its way has nothing left to cancel.
        if (!(e instanceof Error && /\b404\b/.test(e.message))) throw e;
      });
    await chat.stop();
    await cancelled;
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void submit().catch(fail);
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  cancel.addEventListener('click', () => void cancelRun().catch(fail));
  newButton.addEventListener('click', () => panel.newThread());

  /** The agents the server runs. Asked again when there are none yet (a server with API tokens answers once the studio has one). */
  async function loadAgents(): Promise<void> {
    const caps = (await (await deps.api('/v1/capabilities')).json()) as { agents?: readonly string[] };
    const kept = agentPick.value;
    agentPick.replaceChildren(...(caps.agents ?? []).map((a) => el('option', { value: a }, a)));
    if (kept !== '' && (caps.agents ?? []).includes(kept)) agentPick.value = kept;
  }
  const agentsKnown = (): Promise<void> => (agentPick.options.length > 0 ? Promise.resolve() : loadAgents());
  agentPick.addEventListener('focus', () => void agentsKnown().catch(fail));
  // At start the studio says what went wrong itself (it asks for a token, say).
  void loadAgents().catch(() => undefined);

  makeChat(newThreadId(), []);

  let opening = 0;
  const panel: ChatPanel = {
    newThread(): void {
      opening++;
      errorLine.textContent = '';
      makeChat(newThreadId(), []);
      announced = true;
      deps.onThread?.(chat.id);
      say('A new thread: send a message to start it.');
      input.focus();
    },
    async openThread(threadId: string): Promise<void> {
      // The thread shown already (back from its run's timeline, say): it stays as it is, with what only its streams showed (reasoning, the timeline links).
      if (threadId === chat.id && (busy(chat.status) || chat.messages.length > 0)) return;
      errorLine.textContent = '';
      // The last thread asked for is the one shown: a history that comes back after another was asked for is dropped.
      const mine = ++opening;
      await agentsKnown();
      const history = await deps
        .api(`/v1/ai-sdk/threads/${enc(threadId)}/messages`)
        .then(async (r) => (await r.json()) as UIMessage[])
        .catch((e: unknown) => {
          // A thread not started yet (a new chat's address) is an empty one.
          if (e instanceof Error && /\b404\b/.test(e.message)) return [] as UIMessage[];
          throw e;
        });
      if (mine !== opening) return;
      const made = makeChat(threadId, history);
      announced = true;
      deps.onThread?.(threadId);
      say(
        history.length === 0 ? `Thread ${threadId} has no messages yet.` : `Thread ${threadId}: ${history.length} message${history.length === 1 ? '' : 's'}.`,
      );
      // The agent that ran the thread last, and its run in flight (streamed from its start).
      const runs = await deps
        .api(`/v1/runs?thread_id=${enc(threadId)}&limit=200`)
        .then(async (r) => ((await r.json()) as { items: { agent_id?: string; created_at?: number }[] }).items)
        .catch(() => []);
      const last = [...runs].sort((a, b) => (a.created_at ?? 0) - (b.created_at ?? 0)).at(-1);
      if (last?.agent_id !== undefined && [...agentPick.options].some((o) => o.value === last.agent_id)) agentPick.value = last.agent_id;
      const thread = (await (await deps.api(`/v1/threads/${enc(threadId)}`).catch(() => undefined))?.json().catch(() => undefined)) as
        | { active_run_status?: string }
        | undefined;
      if (thread?.active_run_status === 'running' && chat === made) await made.resumeStream();
    },
  };
  return panel;
}
