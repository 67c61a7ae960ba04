import type { Operation } from 'fast-json-patch';
import { divergenceRows, eventRows, type Row } from '../../src/replay/side-by-side.ts';
import { durationOf, type Timeline, type TimelineStep, type TimelineToolCall } from '../../src/replay/timeline.ts';
import { el, pretty, summaryList } from './dom.ts';

const ms = (n: number | undefined): string => (n === undefined ? '' : `${n} ms`);
const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** A run's timeline: its summary, then a section per step (inference, tools, activities, state diff), then its decisions. */
export function renderTimeline(t: Timeline, options: { readonly live?: boolean } = {}): HTMLElement {
  const root = el('div', { class: 'timeline', 'data-run-id': t.run_id ?? '' });
  const termination = t.termination === undefined ? (options.live === true ? 'running' : 'not finished') : (t.termination as { type?: string }).type ?? 'finished';
  root.append(
    summaryList([
      ['Run', t.run_id ?? ''],
      ['Thread', t.thread_id ?? ''],
      ['Agent', t.agent_id ?? ''],
      ['App', t.app !== undefined ? `${t.app.file} (${t.app.version})` : ''],
      ['Delegated by', t.parent_run_id ?? ''],
      ['Ended', el('span', { class: termination === 'natural_end' ? 'ok' : termination === 'running' ? '' : 'bad', 'data-termination': termination }, termination)],
      ['Steps', String(t.step_count)],
      ['Duration', ms(durationOf(t.started_at, t.ended_at))],
      ['Tokens', `${t.usage.input} in · ${t.usage.output} out · ${t.usage.total} total`],
      ['Answer', t.response ?? ''],
      ['Cancelled', t.cancelled_after_event !== undefined ? `after event #${t.cancelled_after_event}` : ''],
    ]),
  );
  const steps = el('ol', { class: 'steps', 'aria-label': 'Steps' });
  for (const step of t.steps) steps.append(el('li', {}, renderStep(step, t.started_at, step === t.steps.at(-1) && options.live === true)));
  root.append(steps);
  if (t.decisions.length > 0) {
    root.append(el('h3', {}, 'Decisions'));
    const list = el('ul', {});
    for (const d of t.decisions) list.append(el('li', {}, `after event #${d.after_event}: `, el('code', {}, JSON.stringify(d.decisions))));
    root.append(list);
  }
  return root;
}

/**
 * One segment of a run (it was let go while parked and taken up again from the store, on the code
 * current then): a heading that names the segment as its transcript numbers it, the app version that
 * ran it and whether it was taken up from the store, then its timeline.
 */
export function renderSegment(t: Timeline): HTMLElement {
  const index = t.segment ?? 1;
  const app = t.app !== undefined ? ` · ${t.app.file} (${t.app.version})` : '';
  const resumed = t.resumed === true ? ' · taken up again from the store' : '';
  return el('section', { class: 'segment', 'data-segment': index, 'aria-label': `Segment ${index}` }, el('h3', {}, `Segment ${index}${app}${resumed}`), renderTimeline(t));
}

function renderStep(step: TimelineStep, start: number | undefined, open: boolean): HTMLElement {
  const inf = step.inference;
  const title = [`Step ${step.index}`, start !== undefined && step.started_at !== undefined ? `+${step.started_at - start} ms` : '', inf.model !== undefined ? `inference ${inf.model} ${ms(inf.duration_ms)}`.trim() : '', step.tools.length > 0 ? plural(step.tools.length, 'tool call') : '', step.state !== undefined ? plural(step.state.patch.length, 'state change') : '']
    .filter((x) => x !== '')
    .join(' · ');
  const details = el('details', { class: 'step', 'data-step': step.index, open: open || step.index === 1 }, el('summary', {}, title));
  if (inf.model !== undefined || inf.requests.length > 0 || inf.text !== '') {
    const usage = inf.usage as { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | undefined;
    details.append(el('h3', {}, 'Inference'));
    details.append(
      summaryList([
        ['Model', inf.model ?? inf.requests.at(-1)?.model ?? ''],
        ['Duration', ms(inf.duration_ms)],
        ['Tokens', usage !== undefined ? `${usage.prompt_tokens ?? '?'} in · ${usage.completion_tokens ?? '?'} out` : ''],
      ]),
    );
    for (const [i, r] of inf.requests.entries()) {
      details.append(
        el(
          'details',
          { class: 'request' },
          el('summary', {}, `Request${inf.requests.length > 1 ? ` (attempt ${i + 1})` : ''}: ${plural(r.messages.length, 'message')}, ${plural(r.tools.length, 'tool')}${r.error !== undefined ? ' — failed' : ''}`),
          el('pre', {}, pretty(r.messages)),
          el('p', { class: 'note' }, `Tools offered: ${r.tools.join(', ') || 'none'}`),
          r.error !== undefined ? el('pre', {}, pretty(r.error)) : null,
        ),
      );
    }
    if (inf.reasoning !== '') details.append(el('h3', {}, 'Reasoning'), el('pre', {}, inf.reasoning));
    if (inf.text !== '') details.append(el('h3', {}, 'Answer'), el('pre', { class: 'answer' }, inf.text));
  }
  if (step.tools.length > 0) {
    details.append(el('h3', {}, 'Tool calls'));
    for (const call of step.tools) details.append(renderTool(call));
  }
  if (step.activities.length > 0) {
    details.append(el('h3', {}, 'Activities'));
    for (const a of step.activities) details.append(el('p', {}, el('strong', {}, a.type), ' ', el('code', {}, JSON.stringify(a.content))));
  }
  for (const e of step.errors) details.append(el('p', { class: 'bad' }, `Error: ${e}`));
  if (step.state !== undefined) details.append(renderState(step.index, step.state.revision, step.state.patch, step.state.state));
  return details;
}

function renderTool(call: TimelineToolCall): HTMLElement {
  const result = call.result as { status?: string; data?: unknown; message?: string | null } | undefined;
  const head = [`${call.name} [${call.call_id}]`, call.outcome ?? 'running', ms(durationOf(call.started_at, call.ended_at)), call.resumed === true ? 'resumed' : ''].filter((x) => x !== '').join(' · ');
  const details = el('details', { class: 'tool', 'data-call-id': call.call_id }, el('summary', {}, head));
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
  if (call.suspension !== undefined) details.append(el('h4', {}, 'Suspended'), el('pre', {}, pretty(call.suspension)));
  if (call.decision !== undefined) details.append(el('h4', {}, 'Decision'), el('pre', {}, pretty(call.decision)));
  if (call.failure !== undefined) details.append(el('p', { class: 'bad' }, `Failed: ${call.failure}`));
  if (result !== undefined) details.append(el('h4', {}, 'Result'), el('pre', { class: result.status === 'error' ? 'bad' : '' }, result.status === 'error' ? `error: ${result.message ?? ''}` : pretty(result.data ?? null)));
  if (call.resumed_result !== undefined) details.append(el('h4', {}, 'Result after the decision'), el('pre', {}, pretty(call.resumed_result)));
  return details;
}

function renderState(step: number, revision: number | undefined, patch: readonly Operation[], state: unknown): HTMLElement {
  const table = el('table', { class: 'patch' }, el('caption', {}, `Changes to the state in step ${step} (JSON Patch against the step before)`), el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'op'), el('th', { scope: 'col' }, 'path'), el('th', { scope: 'col' }, 'value'))));
  const body = el('tbody', {});
  for (const op of patch) body.append(el('tr', { 'data-op': op.op }, el('td', {}, op.op), el('td', {}, op.path), el('td', {}, 'value' in op ? JSON.stringify(op.value) : '')));
  table.append(body);
  return el(
    'details',
    { class: 'state', 'data-step': step },
    el('summary', {}, `State after step ${step}: ${plural(patch.length, 'change')}${revision !== undefined ? ` (revision ${revision})` : ''}`),
    table,
    el('details', {}, el('summary', {}, 'The whole state'), el('pre', {}, pretty(state))),
  );
}

export interface ReplayResult {
  readonly report: {
    readonly identical: boolean;
    readonly expectedEvents: number;
    readonly actualEvents: number;
    readonly termination?: { readonly type: string };
    readonly divergence?: { readonly port: string; readonly message: string; readonly diff?: readonly string[]; readonly atEvent: number; readonly line?: number };
    readonly firstDifference?: { readonly index: number; readonly expected?: string; readonly actual?: string; readonly diff: readonly string[] };
    readonly at?: { readonly line: number; readonly record: string };
  };
  readonly recorded_line?: string;
}

/** A replay's verdict: identical, or where it left the recording with the recorded exchange beside what the replay did now. */
export function renderReplay(result: ReplayResult, source: string): HTMLElement {
  const r = result.report;
  if (r.identical) {
    return el('div', { class: 'identical', 'data-verdict': 'identical' }, el('p', {}, el('strong', { class: 'ok' }, 'Identical'), ` — ${source}: ${r.actualEvents} of ${r.expectedEvents} events replayed byte for byte; the run ended ${r.termination?.type ?? ''}.`));
  }
  const box = el('div', { class: 'divergence', 'data-verdict': 'diverged' });
  box.append(el('p', {}, el('strong', { class: 'bad' }, 'Diverged'), ` — ${source}${r.at !== undefined ? `, line ${r.at.line} (${r.at.record} record)` : ''}.`));
  if (r.divergence !== undefined) {
    box.append(el('p', { 'data-port': r.divergence.port }, `The ${r.divergence.port} port left the recording after event #${r.divergence.atEvent - 1}: ${r.divergence.message}`));
    box.append(sideBySide(divergenceRows(r.divergence, result.recorded_line), `Where the ${r.divergence.port} port left the recording`));
  }
  if (r.firstDifference !== undefined) {
    box.append(el('p', {}, `First differing event: #${r.firstDifference.index}`));
    box.append(sideBySide(eventRows(r.firstDifference), `Event #${r.firstDifference.index}, recorded and replayed`));
  }
  return box;
}

function sideBySide(rows: readonly Row[], caption: string): HTMLTableElement {
  const table = el('table', { class: 'side-by-side' }, el('caption', {}, caption), el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Recorded'), el('th', { scope: 'col' }, 'Now'))));
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
