import type { Timeline, TimelineStep, TimelineToolCall } from '../../src/replay/timeline.ts';
import { el } from './dom.ts';

/**
 * A run as a waterfall: a row per step, its inference and each of its tool calls, with a bar on the
 * run's clock (offset and width set through the CSSOM: the page's content security policy forbids
 * style attributes, not style properties). Failed and waiting calls are marked on the bar and in its
 * name. Without times (a run followed from its events alone) each step gets an equal slice of the
 * width, in order. A long run's rows are put on the page a chunk at a time, the next chunk when the
 * end of the list scrolls into view (or its "Show more" button is pressed).
 */

export type RowStatus = 'failed' | 'waiting' | 'running' | 'ok';

export interface WaterfallRow {
  readonly kind: 'step' | 'inference' | 'tool';
  readonly step: number;
  readonly call_id?: string;
  /** What the row is: `step 3`, `inference gpt-4o`, `tool get_weather`. */
  readonly label: string;
  /** How long it took and how it ended: `12 ms`, `failed`. */
  readonly notes: readonly string[];
  /** Its accessible name, label and notes: `tool get_weather, 12 ms, failed`. */
  readonly name: string;
  readonly status: RowStatus;
  /** Where its bar starts and how wide it is, as fractions of the run's span (0..1). */
  readonly offset: number;
  readonly width: number;
  readonly duration?: number;
}

const CHUNK = 100;

export const failed = (call: TimelineToolCall): boolean =>
  call.outcome === 'failed' || call.failure !== undefined || (call.result as { status?: string } | undefined)?.status === 'error';
export const suspended = (call: TimelineToolCall): boolean => call.outcome === 'suspended' || call.suspension !== undefined;
/** Suspended and not settled in this timeline: no decision, not resumed. */
export const waiting = (call: TimelineToolCall): boolean => suspended(call) && call.decision === undefined && call.resumed !== true;

export function callStatus(call: TimelineToolCall): RowStatus {
  if (failed(call)) return 'failed';
  if (waiting(call)) return 'waiting';
  if (call.outcome === undefined || call.outcome === '') return 'running';
  return 'ok';
}

/** The rows of a run's waterfall, each placed on the run's clock, and the span of that clock (none without times). */
export function waterfallOf(t: Timeline): { readonly rows: WaterfallRow[]; readonly span?: number } {
  const times: number[] = [];
  const push = (x: number | undefined): void => {
    if (x !== undefined) times.push(x);
  };
  push(t.started_at);
  push(t.ended_at);
  for (const s of t.steps) {
    push(s.started_at);
    push(s.ended_at);
    if (s.inference.started_at !== undefined) push(s.inference.started_at + (s.inference.duration_ms ?? 0));
    for (const c of s.tools) {
      push(c.started_at);
      push(c.ended_at);
    }
  }
  let origin = t.started_at ?? Infinity;
  let end = -Infinity;
  for (const x of times) {
    if (x < origin) origin = x;
    if (x > end) end = x;
  }
  // A clock that never moved (a deterministic one) places nothing: steps in order then, as without times.
  const timed = times.length > 0 && end > origin;
  const span = Math.max(end - origin, 1);
  const steps = t.steps.length;
  const rows: WaterfallRow[] = [];
  for (const [i, step] of t.steps.entries()) {
    // Without times: the step's slice of the width, in order.
    const slot = (from: number | undefined, to: number | undefined): { offset: number; width: number } => {
      if (!timed) return { offset: i / steps, width: 1 / steps };
      const a = from ?? step.started_at ?? origin;
      const b = to ?? end;
      return { offset: (a - origin) / span, width: Math.max(b - a, 0) / span };
    };
    const stepDuration = step.started_at !== undefined && step.ended_at !== undefined ? step.ended_at - step.started_at : undefined;
    const bad = step.tools.filter(failed).length;
    const parked = step.tools.filter(waiting).length;
    const stepStatus: RowStatus = bad > 0 || step.errors.length > 0 ? 'failed' : parked > 0 ? 'waiting' : step.ended ? 'ok' : 'running';
    const stepNotes = [
      bad > 0 ? `${bad} failed` : '',
      parked > 0 ? 'waiting' : '',
      step.errors.length > 0 ? `${step.errors.length} error${step.errors.length === 1 ? '' : 's'}` : '',
      !step.ended ? 'running' : '',
    ].filter((x) => x !== '');
    rows.push({
      kind: 'step',
      step: step.index,
      ...named(`step ${step.index}`, [ms(stepDuration), ...stepNotes]),
      status: stepStatus,
      ...slot(step.started_at, step.ended_at),
      ...(stepDuration !== undefined ? { duration: stepDuration } : {}),
    });
    rows.push(...inferenceRow(step, slot));
    for (const call of step.tools) {
      const status = callStatus(call);
      const duration = call.started_at !== undefined && call.ended_at !== undefined ? Math.max(call.ended_at - call.started_at, 0) : undefined;
      const note = status === 'ok' ? '' : status;
      rows.push({
        kind: 'tool',
        step: step.index,
        call_id: call.call_id,
        ...named(`tool ${call.name}`, [ms(duration), note]),
        status,
        ...slot(call.started_at, call.ended_at ?? (status === 'waiting' ? call.started_at : undefined)),
        ...(duration !== undefined ? { duration } : {}),
      });
    }
  }
  return timed ? { rows, span: end - origin } : { rows };
}

function inferenceRow(step: TimelineStep, slot: (from: number | undefined, to: number | undefined) => { offset: number; width: number }): WaterfallRow[] {
  const inf = step.inference;
  if (inf.model === undefined && inf.requests.length === 0) return [];
  const model = inf.model ?? inf.requests.at(-1)?.model ?? '';
  const lastFailed = inf.requests.at(-1)?.error !== undefined;
  const status: RowStatus = lastFailed ? 'failed' : inf.model === undefined ? 'running' : 'ok';
  const from = inf.started_at;
  const to = from !== undefined && inf.duration_ms !== undefined ? from + inf.duration_ms : undefined;
  const notes = [lastFailed ? 'failed' : '', inf.requests.length > 1 ? `${inf.requests.length} attempts` : ''].filter((x) => x !== '');
  return [
    {
      kind: 'inference',
      step: step.index,
      ...named(`inference ${model}`.trim(), [ms(inf.duration_ms), ...notes]),
      status,
      ...slot(from, to),
      ...(inf.duration_ms !== undefined ? { duration: inf.duration_ms } : {}),
    },
  ];
}

function named(label: string, notes: readonly string[]): { label: string; notes: string[]; name: string } {
  const kept = notes.filter((x) => x !== '');
  return { label, notes: kept, name: [label, ...kept].join(', ') };
}

const ms = (n: number | undefined): string => (n === undefined ? '' : `${n} ms`);

const pct = (x: number): string => `${(Math.min(Math.max(x, 0), 1) * 100).toFixed(3)}%`;

/** The waterfall's element; `select` is called with the step (and the call) of the bar pressed. */
export function renderWaterfall(t: Timeline, select: (step: number, callId?: string) => void): HTMLElement {
  const { rows, span } = waterfallOf(t);
  const calls = rows.filter((r) => r.kind === 'tool');
  const bad = calls.filter((r) => r.status === 'failed').length;
  const parked = calls.filter((r) => r.status === 'waiting').length;
  const section = el(
    'section',
    { class: 'waterfall', 'aria-label': 'Waterfall' },
    el('h3', {}, 'Waterfall'),
    el(
      'p',
      { class: 'note' },
      [
        `${t.steps.length} step${t.steps.length === 1 ? '' : 's'}`,
        `${calls.length} tool call${calls.length === 1 ? '' : 's'}`,
        bad > 0 ? `${bad} failed` : '',
        parked > 0 ? `${parked} waiting` : '',
        span !== undefined ? `${span} ms on the run's clock` : 'no time passed on the run’s clock (or no times: events alone): steps in order',
      ]
        .filter((x) => x !== '')
        .join(' · '),
    ),
  );
  if (rows.length === 0) return section;
  if (span !== undefined) {
    const axis = el('div', { class: 'wf-axis', 'aria-hidden': 'true' });
    for (const f of [0, 0.25, 0.5, 0.75, 1]) {
      const tick = el('span', { class: 'wf-tick' }, `${Math.round(span * f)} ms`);
      tick.style.left = pct(f);
      axis.append(tick);
    }
    section.append(el('div', { class: 'wf-head', 'aria-hidden': 'true' }, el('span', {}, ''), axis, el('span', {}, '')));
  }
  const list = el('ul', { class: 'wf-rows', 'aria-label': 'Steps, inferences and tool calls on the run’s clock' });
  const scroller = el('div', { class: 'wf-scroll' }, list);
  section.append(scroller);
  list.addEventListener('click', (e) => {
    const button = (e.target as Element).closest<HTMLButtonElement>('button.wf-bar-button');
    if (button === null) return;
    const step = Number(button.dataset['step']);
    const call = button.dataset['callId'];
    select(step, call);
  });
  let shown = 0;
  const more = el('button', { type: 'button', class: 'wf-more' });
  const showMore = (): void => {
    const next = rows.slice(shown, shown + CHUNK);
    const frag = document.createDocumentFragment();
    for (const r of next) frag.append(rowElement(r));
    list.append(frag);
    shown += next.length;
    if (shown >= rows.length) {
      more.remove();
      observer?.disconnect();
    } else more.textContent = `Show ${Math.min(CHUNK, rows.length - shown)} more rows (${rows.length - shown} not shown)`;
  };
  more.addEventListener('click', showMore);
  const observer =
    typeof IntersectionObserver === 'function' && rows.length > CHUNK
      ? new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && showMore(), { root: scroller, rootMargin: '200px' })
      : undefined;
  showMore();
  if (shown < rows.length) {
    scroller.append(more);
    observer?.observe(more);
  }
  return section;
}

function rowElement(r: WaterfallRow): HTMLLIElement {
  const bar = el('span', { class: 'wf-bar' });
  bar.style.left = pct(r.offset);
  bar.style.width = pct(r.width);
  const marked = r.status === 'failed' || r.status === 'waiting' || r.status === 'running';
  const meta = el('span', { class: 'wf-meta' });
  for (const [i, note] of r.notes.entries())
    meta.append(i > 0 ? ' ' : '', marked && i === r.notes.length - 1 && note.endsWith(r.status) ? el('span', { class: `badge ${r.status}` }, note) : note);
  // Its name is the words it shows, with commas (`tool fail, 10 ms, failed`): read from its text,
  // the row's grid cells would come out as `tool fail , 10 ms , failed`. The spaces between the
  // cells keep the words it shows apart for whoever reads them as text.
  const button = el(
    'button',
    { type: 'button', class: 'wf-bar-button', 'aria-label': r.name, 'data-step': r.step, 'data-call-id': r.call_id },
    el('span', { class: 'wf-label' }, r.label),
    ' ',
    el('span', { class: 'wf-track' }, bar),
    ' ',
    meta,
  );
  return el('li', { class: `wf-row wf-${r.kind}${r.status !== 'ok' ? ` ${r.status}` : ''}`, 'data-kind': r.kind, 'data-status': r.status }, button);
}
