import './run.css';
import type { Operation } from 'fast-json-patch';
import { divergenceRows, eventRows, whereInEvents, type Row } from '../../src/replay/side-by-side.ts';
import { durationOf, type Timeline, type TimelineInference, type TimelineStep, type TimelineToolCall } from '../../src/replay/timeline.ts';
import { el, pretty, summaryList } from './dom.ts';
import { callStatus, failed, renderWaterfall, suspended, waiting } from './waterfall.ts';

/**
 * A run's view: its summary, its waterfall, then a section per step (inference with the request as a
 * chat, tools, activities, state diff), then its decisions. A step's body is built the first time it
 * is opened (a 5,000-step run puts 5,000 summaries on the page, not 5,000 bodies); the same for a
 * request's messages. Runtime keys (`__runtime`, `__runtime.*`) are left out of state diffs until
 * the timeline's "Show runtime keys" toggle is pressed.
 */
const ms = (n: number | undefined): string => (n === undefined ? '' : `${n} ms`);
const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
const isObject = (x: unknown): x is Record<string, Json> => typeof x === 'object' && x !== null && !Array.isArray(x);

export interface TimelineOptions {
  /** A run still going: its last step is shown open, and a run not ended is `running`. */
  readonly live?: boolean;
  /** Called when the user opens a step (by its summary or a bar of the waterfall), with its index. */
  readonly onStepOpen?: (index: number) => void;
}

/** Steps of a run put on the page a chunk at a time, this many at once. */
const STEP_CHUNK = 100;

/** Each rendered timeline's way to its step `index`: put on the page if it was not yet, null when there is none. */
const reveal = new WeakMap<HTMLElement, (index: number) => HTMLDetailsElement | null>();

/** Bodies not built yet, by the `<details>` they go in: built on first open. */
const unbuilt = new WeakMap<HTMLDetailsElement, () => void>();

function build(details: HTMLDetailsElement): void {
  const fill = unbuilt.get(details);
  if (fill === undefined) return;
  unbuilt.delete(details);
  fill();
}

/** A `<details>` whose body `fill` appends when it is first opened (at once when it starts open). */
function lazyDetails(
  attrs: Record<string, string | number | boolean | undefined>,
  summary: HTMLElement,
  fill: (details: HTMLDetailsElement) => void,
): HTMLDetailsElement {
  const details = el('details', attrs, summary);
  if (details.open) fill(details);
  else unbuilt.set(details, () => fill(details));
  return details;
}

/** Builds a lazy body before its `<details>` opens: by a click on its summary, or any other way it opens (`toggle`). */
function buildOnOpen(container: HTMLElement): void {
  container.addEventListener(
    'click',
    (e) => {
      const summary = (e.target as Element).closest('summary');
      if (summary?.parentElement instanceof HTMLDetailsElement) build(summary.parentElement);
    },
    true,
  );
  // `toggle` does not bubble: caught on its way down.
  container.addEventListener(
    'toggle',
    (e) => {
      if (e.target instanceof HTMLDetailsElement && e.target.open) build(e.target);
    },
    true,
  );
}

/** A run's timeline: its summary, its waterfall, then a section per step, then its decisions. */
export function renderTimeline(t: Timeline, options: TimelineOptions = {}): HTMLElement {
  const root = el('div', { class: 'timeline', 'data-run-id': t.run_id ?? '' });
  const termination =
    t.termination === undefined ? (options.live === true ? 'running' : 'not finished') : ((t.termination as { type?: string }).type ?? 'finished');
  root.append(
    summaryList([
      ['Run', t.run_id ?? ''],
      ['Thread', t.thread_id ?? ''],
      ['Agent', t.agent_id ?? ''],
      ['App', t.app !== undefined ? `${t.app.file} (${t.app.version})` : ''],
      ['Delegated by', t.parent_run_id ?? ''],
      [
        'Ended',
        el('span', { class: termination === 'natural_end' ? 'ok' : termination === 'running' ? '' : 'bad', 'data-termination': termination }, termination),
      ],
      ['Steps', String(t.step_count)],
      ['Duration', ms(durationOf(t.started_at, t.ended_at))],
      ['Tokens', `${t.usage.input} in · ${t.usage.output} out · ${t.usage.total} total`],
      ['Answer', t.response ?? ''],
      ['Cancelled', t.cancelled_after_event !== undefined ? whereInEvents(t.cancelled_after_event) : ''],
    ]),
  );
  root.append(
    renderWaterfall(t, (index, callId) => {
      if (showStep(root, index, callId)) options.onStepOpen?.(index);
    }),
  );
  const runtime = el('button', { type: 'button', class: 'runtime-toggle', 'aria-pressed': 'false' }, 'Show runtime keys');
  runtime.addEventListener('click', () => {
    const on = !root.classList.contains('show-runtime');
    root.classList.toggle('show-runtime', on);
    runtime.setAttribute('aria-pressed', String(on));
  });
  root.append(
    el('div', { class: 'run-tools' }, runtime, el('span', { class: 'note' }, 'State diffs leave out the runtime’s own keys (__runtime…) unless shown.')),
  );
  const steps = el('ol', { class: 'steps', 'aria-label': 'Steps' });
  const last = t.steps.at(-1);
  // Steps go on the page a chunk at a time: the next when the list's end comes near the screen, or
  // when a step further on is asked for (a bar of the waterfall, a link to it).
  let shown = 0;
  const more = el('button', { type: 'button', class: 'steps-more' });
  const observer =
    typeof IntersectionObserver === 'function'
      ? new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && showMore(), { rootMargin: '600px' })
      : undefined;
  const showMore = (upTo = shown + STEP_CHUNK): void => {
    const frag = document.createDocumentFragment();
    for (const step of t.steps.slice(shown, Math.max(upTo, shown)))
      frag.append(el('li', {}, renderStep(step, t.started_at, step.index === 1 || (step === last && options.live === true))));
    steps.append(frag);
    shown = Math.min(Math.max(upTo, shown), t.steps.length);
    if (shown >= t.steps.length) {
      more.remove();
      observer?.disconnect();
    } else more.textContent = `Show ${Math.min(STEP_CHUNK, t.steps.length - shown)} more steps (${t.steps.length - shown} not shown)`;
  };
  more.addEventListener('click', () => showMore());
  // A run followed live shows its last step open: every step up to it is there.
  showMore(options.live === true ? t.steps.length : STEP_CHUNK);
  reveal.set(root, (index) => {
    const at = t.steps.findIndex((s) => s.index === index);
    if (at < 0) return null;
    if (at >= shown) showMore(at + 1);
    return steps.querySelector<HTMLDetailsElement>(`:scope > li > details.step[data-step="${index}"]`);
  });
  buildOnOpen(steps);
  if (options.onStepOpen !== undefined) {
    const onStepOpen = options.onStepOpen;
    steps.addEventListener('click', (e) => {
      const summary = (e.target as Element).closest('summary');
      const details = summary?.parentElement;
      if (details instanceof HTMLDetailsElement && details.classList.contains('step') && !details.open) onStepOpen(Number(details.dataset['step']));
    });
  }
  root.append(steps);
  if (shown < t.steps.length) {
    root.append(more);
    observer?.observe(more);
  }
  if (t.decisions.length > 0) {
    root.append(el('h3', {}, 'Decisions'));
    const list = el('ul', {});
    for (const d of t.decisions) list.append(el('li', {}, `${whereInEvents(d.after_event)}: `, el('code', {}, JSON.stringify(d.decisions))));
    root.append(list);
  }
  return root;
}

/**
 * Opens step `index` of a rendered timeline (its body built, scrolled to, its summary focused);
 * false when there is no such step. In a run shown segment by segment, steps are numbered per
 * segment: given the run's element it opens the first segment's, given a segment's element that one's.
 */
export function openStep(root: HTMLElement, index: number): boolean {
  return showStep(root, index);
}

function showStep(root: HTMLElement, index: number, callId?: string): boolean {
  if (!Number.isInteger(index)) return false;
  const timelines = root.classList.contains('timeline') ? [root] : [...root.querySelectorAll<HTMLElement>('.timeline')];
  let step: HTMLDetailsElement | null = null;
  for (const timeline of timelines) if ((step = reveal.get(timeline)?.(index) ?? null) !== null) break;
  if (step === null) return false;
  build(step);
  step.open = true;
  let target: HTMLElement = step;
  if (callId !== undefined) {
    const call = [...step.querySelectorAll<HTMLDetailsElement>('details.tool')].find((d) => d.dataset['callId'] === callId);
    if (call !== undefined) {
      build(call);
      call.open = true;
      target = call;
    }
  }
  target.scrollIntoView({ block: 'start' });
  target.querySelector<HTMLElement>(':scope > summary')?.focus({ preventScroll: true });
  return true;
}

/**
 * One segment of a run (it was let go while parked and taken up again from the store, on the code
 * current then): a heading that names the segment as its transcript numbers it, the app version that
 * ran it and whether it was taken up from the store, then its timeline.
 */
export function renderSegment(t: Timeline, options: TimelineOptions = {}): HTMLElement {
  const index = t.segment ?? 1;
  const app = t.app !== undefined ? ` · ${t.app.file} (${t.app.version})` : '';
  const resumed = t.resumed === true ? ' · taken up again from the store' : '';
  return el(
    'section',
    { class: 'segment', 'data-segment': index, 'aria-label': `Segment ${index}` },
    el('h3', {}, `Segment ${index}${app}${resumed}`),
    renderTimeline(t, options),
  );
}

function badge(kind: 'failed' | 'waiting' | 'running' | 'error', text: string): HTMLElement {
  return el('span', { class: `badge ${kind}` }, text);
}

function renderStep(step: TimelineStep, start: number | undefined, open: boolean): HTMLElement {
  const inf = step.inference;
  const title = [
    `Step ${step.index}`,
    start !== undefined && step.started_at !== undefined ? `+${step.started_at - start} ms` : '',
    inf.model !== undefined ? `inference ${inf.model} ${ms(inf.duration_ms)}`.trim() : '',
    step.tools.length > 0 ? plural(step.tools.length, 'tool call') : '',
    step.state !== undefined ? plural(step.state.patch.length, 'state change') : '',
  ]
    .filter((x) => x !== '')
    .join(' · ');
  const bad = step.tools.filter(failed).length;
  const parked = step.tools.filter(waiting).length;
  const inferenceFailed = inf.requests.at(-1)?.error !== undefined;
  const summary = el(
    'summary',
    {},
    el('span', { class: 'step-title' }, title),
    bad > 0 ? badge('failed', `${bad} failed`) : null,
    parked > 0 ? badge('waiting', parked === 1 ? 'waiting' : `${parked} waiting`) : null,
    inferenceFailed ? badge('failed', 'inference failed') : null,
    step.errors.length > 0 ? badge('error', plural(step.errors.length, 'error')) : null,
  );
  const classes = ['step', bad > 0 || step.errors.length > 0 || inferenceFailed ? 'failed' : '', parked > 0 ? 'waiting' : ''].filter((x) => x !== '').join(' ');
  return lazyDetails({ class: classes, 'data-step': step.index, open }, summary, (details) => details.append(...stepBody(step)));
}

function stepBody(step: TimelineStep): HTMLElement[] {
  const inf = step.inference;
  const out: HTMLElement[] = [];
  if (inf.model !== undefined || inf.requests.length > 0 || inf.text !== '') out.push(...renderInference(inf));
  if (step.tools.length > 0) {
    out.push(el('h3', {}, 'Tool calls'));
    for (const call of step.tools) out.push(renderTool(call));
  }
  if (step.activities.length > 0) {
    out.push(el('h3', {}, 'Activities'));
    for (const a of step.activities) out.push(el('p', {}, el('strong', {}, a.type), ' ', el('code', {}, JSON.stringify(a.content))));
  }
  for (const e of step.errors) out.push(el('p', { class: 'bad' }, `Error: ${e}`));
  if (step.state !== undefined) out.push(renderState(step.index, step.state.revision, step.state.patch, step.state.state));
  return out;
}

function renderInference(inf: TimelineInference): HTMLElement[] {
  const usage = inf.usage as { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | undefined;
  const out: HTMLElement[] = [
    el('h3', {}, 'Inference'),
    summaryList([
      ['Model', inf.model ?? inf.requests.at(-1)?.model ?? ''],
      ['Duration', ms(inf.duration_ms)],
      ['Tokens', usage !== undefined ? `${usage.prompt_tokens ?? '?'} in · ${usage.completion_tokens ?? '?'} out` : ''],
    ]),
  ];
  for (const [i, r] of inf.requests.entries()) {
    const summary = el(
      'summary',
      {},
      `Request${inf.requests.length > 1 ? ` (attempt ${i + 1})` : ''}: ${plural(r.message_count, 'message')}, ${plural(r.tools.length, 'tool')}`,
      r.error !== undefined ? ' — ' : '',
      r.error !== undefined ? badge('failed', 'failed') : null,
    );
    out.push(
      lazyDetails({ class: 'request' }, summary, (details) => {
        details.append(renderMessages(r.messages), el('p', { class: 'note' }, `Tools offered: ${r.tools.join(', ') || 'none'}`));
        if (r.error !== undefined) details.append(el('pre', { class: 'bad' }, pretty(r.error)));
      }),
    );
  }
  if (inf.reasoning !== '') out.push(el('h3', {}, 'Reasoning'), el('pre', {}, inf.reasoning));
  if (inf.text !== '') out.push(el('h3', {}, 'Answer'), el('pre', { class: 'answer' }, inf.text));
  return out;
}

/** A request's messages as a chat (role, text, tool calls, tool results), with their raw JSON a toggle away. */
export function renderMessages(messages: readonly unknown[]): HTMLElement {
  const chat = el('ol', { class: 'req-chat', 'aria-label': 'Messages' });
  const names = new Map<string, string>();
  for (const m of messages) chat.append(chatMessage(m, names));
  let raw: HTMLPreElement | undefined;
  const toggle = el('button', { type: 'button', class: 'raw-toggle', 'aria-pressed': 'false' }, 'Raw JSON');
  const box = el('div', { class: 'messages' }, el('div', { class: 'messages-tools' }, toggle), chat);
  toggle.addEventListener('click', () => {
    const on = toggle.getAttribute('aria-pressed') !== 'true';
    if (on && raw === undefined) box.append((raw = el('pre', { class: 'raw' }, pretty(messages))));
    toggle.setAttribute('aria-pressed', String(on));
    chat.hidden = on;
    if (raw !== undefined) raw.hidden = !on;
  });
  return box;
}

function textOf(content: Json | undefined): { texts: string[]; other: Json[] } {
  const texts: string[] = [];
  const other: Json[] = [];
  if (typeof content === 'string') texts.push(content);
  else if (Array.isArray(content)) {
    for (const part of content) {
      if (isObject(part) && part['type'] === 'text' && typeof part['text'] === 'string') texts.push(part['text']);
      else other.push(part);
    }
  } else if (content !== undefined && content !== null) other.push(content);
  return { texts, other };
}

function chatMessage(m: unknown, names: Map<string, string>): HTMLLIElement {
  const o: Record<string, Json> = isObject(m) ? m : { content: m as Json };
  const role = typeof o['role'] === 'string' ? o['role'] : 'unknown';
  const callId = typeof o['tool_call_id'] === 'string' ? o['tool_call_id'] : undefined;
  const head = el('div', { class: 'req-head' }, el('span', { class: 'req-role' }, role === 'tool' ? 'tool result' : role));
  if (callId !== undefined) head.append(' ', el('span', { class: 'note' }, `${names.get(callId) ?? 'call'} [${callId}]`));
  const li = el('li', { class: `req-msg role-${role.replace(/[^a-z0-9_-]/gi, '')}`, 'data-role': role }, head);
  const { texts, other } = textOf(o['content']);
  for (const text of texts) li.append(el('div', { class: 'req-text' }, text));
  for (const part of other) li.append(el('pre', {}, pretty(part)));
  const calls = Array.isArray(o['tool_calls']) ? o['tool_calls'] : [];
  if (calls.length > 0) {
    const list = el('ul', { class: 'req-calls', 'aria-label': 'Tool calls' });
    for (const c of calls) {
      const call = isObject(c) ? c : {};
      const name = typeof call['name'] === 'string' ? call['name'] : '?';
      const id = typeof call['id'] === 'string' ? call['id'] : '';
      if (id !== '') names.set(id, name);
      list.append(
        el(
          'li',
          {},
          el('span', { class: 'req-call' }, `calls ${name}`),
          id !== '' ? el('span', { class: 'note' }, ` [${id}]`) : null,
          el('pre', {}, pretty(call['arguments'] ?? null)),
        ),
      );
    }
    li.append(list);
  }
  return li;
}

function renderTool(call: TimelineToolCall): HTMLElement {
  const result = call.result as { status?: string; data?: unknown; message?: string | null } | undefined;
  const status = callStatus(call);
  const outcome = call.outcome ?? 'running';
  const summary = el(
    'summary',
    {},
    `${call.name} [${call.call_id}] · `,
    status === 'failed' || status === 'waiting' || status === 'running' ? badge(status, status === 'waiting' ? 'waiting' : outcome) : outcome,
    ...[ms(durationOf(call.started_at, call.ended_at)), call.resumed === true ? 'resumed' : ''].filter((x) => x !== '').map((x) => ` · ${x}`),
  );
  const details = el('details', { class: status !== 'ok' ? `tool ${status}` : 'tool', 'data-call-id': call.call_id, 'data-status': status }, summary);
  // A suspended call's arguments are in its ticket, below, with what it waits for.
  if (!suspended(call) || JSON.stringify(ticketArguments(call)) !== JSON.stringify(call.arguments ?? null))
    details.append(el('h4', {}, 'Arguments'), el('pre', {}, pretty(call.arguments)));
  if (call.progress.length > 0) {
    const list = el('ul', { class: 'progress', 'aria-label': `Progress of ${call.name}` });
    for (const p of call.progress) {
      const label = [p.status, p.message, p.progress !== undefined ? `${Math.round(p.progress * 100)}%` : undefined].filter((x) => x !== undefined).join(' · ');
      list.append(el('li', {}, p.progress !== undefined ? el('progress', { max: 1, value: p.progress, 'aria-label': label }) : null, ' ', label));
    }
    details.append(el('h4', {}, 'Progress'), list);
  }
  for (const a of call.activity) details.append(el('p', {}, el('strong', {}, a.type), ' ', el('code', {}, JSON.stringify(a.content))));
  if (call.stream !== '') details.append(el('h4', {}, 'Output'), el('pre', {}, call.stream));
  if (suspended(call)) details.append(...renderTicket(call));
  if (call.decision !== undefined) details.append(...renderDecision(call.decision));
  if (call.failure !== undefined) details.append(el('p', { class: 'bad' }, `Failed: ${call.failure}`));
  // A suspended call's result is its ticket (shown above), not a result.
  if (result !== undefined && !(suspended(call) && result.status === 'pending')) {
    details.append(
      el('h4', {}, 'Result'),
      el('pre', { class: result.status === 'error' ? 'bad' : '' }, result.status === 'error' ? `error: ${result.message ?? ''}` : pretty(result.data ?? null)),
    );
  }
  if (call.resumed_result !== undefined) details.append(el('h4', {}, 'Result after the decision'), el('pre', {}, pretty(call.resumed_result)));
  return details;
}

/** The arguments a suspended call waits to run with: its ticket's, or the call's own. */
function ticketArguments(call: TimelineToolCall): Json {
  const pending = isObject(call.suspension) && isObject(call.suspension['pending']) ? call.suspension['pending'] : {};
  return pending['arguments'] ?? (call.arguments as Json | undefined) ?? null;
}

/** What a suspended call waits for: the tool and arguments it would run with, the question asked and of what kind. */
function renderTicket(call: TimelineToolCall): HTMLElement[] {
  const ticket = isObject(call.suspension) ? call.suspension : {};
  const ask = isObject(ticket['suspension']) ? ticket['suspension'] : {};
  const pending = isObject(ticket['pending']) ? ticket['pending'] : {};
  const str = (x: Json | undefined): string => (typeof x === 'string' ? x : '');
  const parameters = ask['parameters'];
  const args = ticketArguments(call);
  const box = el(
    'div',
    { class: `ticket ${waiting(call) ? 'waiting' : 'settled'}` },
    summaryList([
      ['Tool', str(pending['name']) || call.name],
      ['Kind', str(ask['action'])],
      ['Prompt', str(ask['message']) || str((call.result as { message?: Json } | undefined)?.message)],
      ['Resumes by', str(ticket['resume_mode']).replace(/_/g, ' ')],
      ['Ticket', str(ask['id'])],
    ]),
    el('h4', {}, 'Arguments it waits to run with'),
    el('pre', {}, pretty(args)),
    parameters !== undefined && parameters !== null ? el('h4', {}, 'Parameters of the question') : null,
    parameters !== undefined && parameters !== null ? el('pre', {}, pretty(parameters)) : null,
  );
  return [el('h4', {}, waiting(call) ? 'Waiting for a decision' : 'Waited for a decision'), box];
}

/** A decision, its empty fields left out. */
function renderDecision(decision: Json): HTMLElement[] {
  if (!isObject(decision)) return [el('h4', {}, 'Decision'), el('pre', {}, pretty(decision))];
  const shown = (x: Json | undefined): boolean => x !== undefined && x !== null && x !== '';
  const rest = Object.fromEntries(
    Object.entries(decision).filter(([k, v]) => !['action', 'reason', 'decision_id', 'result', 'updated_at'].includes(k) && shown(v)),
  );
  const parts: (HTMLElement | null)[] = [
    el('h4', {}, 'Decision'),
    summaryList([
      ['Action', typeof decision['action'] === 'string' ? decision['action'] : ''],
      ['Reason', typeof decision['reason'] === 'string' ? decision['reason'] : ''],
      ['Decision id', typeof decision['decision_id'] === 'string' ? decision['decision_id'] : ''],
    ]),
    shown(decision['result']) ? el('pre', {}, pretty(decision['result'])) : null,
    Object.keys(rest).length > 0 ? el('pre', {}, pretty(rest)) : null,
  ];
  return parts.filter((x): x is HTMLElement => x !== null);
}

/** A path into the runtime's own keys: a segment `__runtime` or `__runtime.…`. */
export const isRuntimePath = (path: string): boolean => path.split('/').some((s) => s === '__runtime' || s.startsWith('__runtime.'));

/** A state without the runtime's own keys, at any depth. */
export function withoutRuntime(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutRuntime);
  if (!isObject(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (k !== '__runtime' && !k.startsWith('__runtime.')) out[k] = withoutRuntime(x);
  return out;
}

function renderState(step: number, revision: number | undefined, patch: readonly Operation[], state: unknown): HTMLElement {
  const table = el(
    'table',
    { class: 'patch' },
    el('caption', {}, `Changes to the state in step ${step} (JSON Patch against the step before)`),
    el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'op'), el('th', { scope: 'col' }, 'path'), el('th', { scope: 'col' }, 'value'))),
  );
  const body = el('tbody', {});
  let runtime = 0;
  for (const op of patch) {
    const internal = isRuntimePath(op.path);
    if (internal) runtime++;
    body.append(
      el(
        'tr',
        { 'data-op': op.op, class: internal ? 'runtime' : undefined },
        el('td', {}, op.op),
        el('td', {}, op.path),
        el('td', {}, 'value' in op ? JSON.stringify(op.value) : ''),
      ),
    );
  }
  table.append(body);
  const whole = lazyDetails({}, el('summary', {}, 'The whole state'), (d) =>
    d.append(el('pre', { class: 'app-only' }, pretty(withoutRuntime(state))), el('pre', { class: 'runtime' }, pretty(state))),
  );
  return el(
    'details',
    { class: 'state', 'data-step': step },
    el('summary', {}, `State after step ${step}: ${plural(patch.length, 'change')}${revision !== undefined ? ` (revision ${revision})` : ''}`),
    runtime > 0
      ? el('p', { class: 'note app-only runtime-note' }, `${plural(runtime, 'change')} to runtime keys not shown (Show runtime keys, above, shows them).`)
      : null,
    runtime < patch.length || runtime === 0 ? table : el('div', { class: 'runtime' }, table),
    whole,
  );
}

export interface ReplayResult {
  readonly report: {
    readonly identical: boolean;
    readonly expectedEvents: number;
    readonly actualEvents: number;
    readonly termination?: { readonly type: string };
    readonly divergence?: {
      readonly port: string;
      readonly message: string;
      readonly diff?: readonly string[];
      readonly atEvent: number;
      readonly line?: number;
    };
    readonly firstDifference?: { readonly index: number; readonly expected?: string; readonly actual?: string; readonly diff: readonly string[] };
    readonly at?: { readonly line: number; readonly record: string };
  };
  readonly recorded_line?: string;
}

/** A replay's verdict: identical, or where it left the recording with the recorded exchange beside what the replay did now. */
export function renderReplay(result: ReplayResult, source: string): HTMLElement {
  const r = result.report;
  if (r.identical) {
    return el(
      'div',
      { class: 'identical', 'data-verdict': 'identical' },
      el(
        'p',
        {},
        el('strong', { class: 'ok' }, 'Identical'),
        ` — ${source}: ${r.actualEvents} of ${r.expectedEvents} events replayed byte for byte; the run ended ${r.termination?.type ?? ''}.`,
      ),
    );
  }
  const box = el('div', { class: 'divergence', 'data-verdict': 'diverged' });
  box.append(
    el('p', {}, el('strong', { class: 'bad' }, 'Diverged'), ` — ${source}${r.at !== undefined ? `, line ${r.at.line} (${r.at.record} record)` : ''}.`),
  );
  if (r.divergence !== undefined) {
    box.append(
      el(
        'p',
        { 'data-port': r.divergence.port },
        `The ${r.divergence.port} port left the recording ${whereInEvents(r.divergence.atEvent)}: ${r.divergence.message}`,
      ),
    );
    box.append(sideBySide(divergenceRows(r.divergence, result.recorded_line), `Where the ${r.divergence.port} port left the recording`));
  }
  if (r.firstDifference !== undefined) {
    box.append(el('p', {}, `First differing event: #${r.firstDifference.index}`));
    box.append(sideBySide(eventRows(r.firstDifference), `Event #${r.firstDifference.index}, recorded and replayed`));
  }
  return box;
}

function sideBySide(rows: readonly Row[], caption: string): HTMLTableElement {
  const table = el(
    'table',
    { class: 'side-by-side' },
    el('caption', {}, caption),
    el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Recorded'), el('th', { scope: 'col' }, 'Now'))),
  );
  const body = el('tbody', {});
  for (const row of rows) {
    const left = 'left' in row ? row.left : '';
    const right = 'right' in row ? row.right : '';
    const marked = (text: string, on: boolean): HTMLElement => (on && text !== '' ? el('mark', {}, text) : el('span', {}, text));
    body.append(
      el(
        'tr',
        { class: row.op, 'data-op': row.op },
        el('td', {}, marked(left, row.op === 'changed' || row.op === 'left')),
        el('td', {}, marked(right, row.op === 'changed' || row.op === 'right')),
      ),
    );
  }
  table.append(body);
  return table;
}
