import type { ForkStepView, ForkView } from '../../src/replay/fork-view.ts';
import { readEditLine } from '../../src/replay/edit-line.ts';
import { byId, el } from './dom.ts';

/** What the server answers a fork with (`POST /v1/inspector/fork`). */
interface Forked {
  readonly transcript: string;
  readonly inferences: { readonly recorded: number; readonly model: number };
  readonly view: ForkView;
}

/** The edits of the form: one `PATH=JSON` a line, as `awaken replay --fork-at --edit` takes them; a line that is not one: why, naming it. */
export function editsOf(text: string): { path: string; value: unknown }[] | string {
  const edits: { path: string; value: unknown }[] = [];
  for (const [i, raw] of text.split('\n').entries()) {
    if (raw.trim() === '') continue;
    const line = readEditLine(raw.trim());
    if (line.ok) edits.push({ path: line.path, value: line.value });
    else if (line.problem === 'no_equals') return `Edit line ${i + 1}: give PATH=JSON (/agent/system_prompt="Be brief.")`;
    else return `Edit line ${i + 1}: the value is not JSON (a string is quoted: "text")`;
  }
  return edits;
}

/** A step in a cell: what the model said, then each call with what it gave. */
function stepCell(step: ForkStepView | undefined): HTMLTableCellElement {
  if (step === undefined) return el('td', { class: 'ended' }, '(the run had ended)');
  const lines = [step.text, ...step.calls.map((c) => `${c.name}(${JSON.stringify(c.arguments)}) → ${JSON.stringify(c.result)}`)].filter((l) => l !== '');
  return el('td', {}, lines.join('\n'));
}

const endOf = (end: ForkView['parent']): string =>
  `${(end.termination as { type?: string } | null)?.type ?? '-'} after ${end.steps} step${end.steps === 1 ? '' : 's'}${end.response !== '' ? `: ${end.response}` : ''}`;

/** The parent and its fork side by side from the fork point, the step where they part marked. */
export function renderFork(forked: Forked, name: string): HTMLElement {
  const { view, inferences } = forked;
  const box = el('div', { class: 'fork', 'data-parted-at': view.parted_at ?? '' });
  const answered = `inferences answered by the recording: ${inferences.recorded}, by your model: ${inferences.model}`;
  box.append(
    el(
      'p',
      {},
      view.parted_at !== undefined
        ? el('strong', { class: 'bad' }, `The runs part at step ${view.parted_at}`)
        : !view.same_end
          ? el('strong', { class: 'bad' }, 'The steps went as recorded, and the runs ended differently')
          : el('strong', { class: 'ok' }, 'The fork went as the recording did'),
      ` — ${name} forked at step ${view.at_step}; ${answered}.`,
    ),
  );
  const rows = view.rows.map((r) =>
    el(
      'tr',
      { class: r.same ? undefined : 'changed', 'data-step': r.step },
      el('th', { scope: 'row' }, r.step === view.parted_at ? `${r.step} (they part here)` : String(r.step)),
      stepCell(r.parent),
      stepCell(r.fork),
    ),
  );
  const ends = el(
    'tr',
    { class: view.same_end ? 'ends' : 'ends changed' },
    el('th', { scope: 'row' }, 'End'),
    el('td', {}, endOf(view.parent)),
    el('td', {}, endOf(view.fork)),
  );
  box.append(
    el(
      'table',
      { class: 'side-by-side fork-steps' },
      el('caption', {}, `The recorded run and its fork after step ${view.at_step}`),
      el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Step'), el('th', { scope: 'col' }, 'Recorded'), el('th', { scope: 'col' }, 'Fork'))),
      el('tbody', {}, ...rows, ends),
    ),
  );
  const file = `${name.replace(/\.jsonl$/, '')}.fork-${view.at_step}.jsonl`;
  const href = URL.createObjectURL(new Blob([forked.transcript], { type: 'application/x-ndjson' }));
  box.append(el('p', {}, el('a', { href, download: file }, `Download the fork's transcript (${file})`)));
  return box;
}

/** The fork form of the replay view: it forks the recorded transcript picked above it. */
export function mountFork(io: {
  readonly api: (path: string, init?: RequestInit) => Promise<Response>;
  readonly say: (text: string) => void;
  readonly error: (text: string) => void;
  /** A failed call: what the server said (a 401 asks for a token instead). */
  readonly fail: (e: unknown) => void;
}): void {
  byId<HTMLFormElement>('fork-form').addEventListener('submit', (event) => {
    event.preventDefault();
    io.error('');
    const name = byId<HTMLSelectElement>('replay-pick').value;
    if (name === '') return io.error('Pick a recorded transcript to fork.');
    const edits = editsOf(byId<HTMLTextAreaElement>('fork-edits').value);
    if (typeof edits === 'string') return io.error(edits);
    const modelText = byId<HTMLTextAreaElement>('fork-model').value.trim();
    let model: unknown;
    try {
      model = modelText === '' ? undefined : JSON.parse(modelText);
    } catch {
      return io.error('The scripted model is not JSON: a list of steps, [{"text": "Brief."}]');
    }
    const body = { name, at_step: Number(byId<HTMLInputElement>('fork-step').value), edits, ...(model !== undefined ? { model } : {}) };
    io.say(`forking ${name}…`);
    void io
      .api('/v1/inspector/fork', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
      .then((r) => r.json() as Promise<Forked>)
      .then((forked) => {
        byId('fork-result').replaceChildren(renderFork(forked, name));
        io.say(`forked ${name} at step ${forked.view.at_step}`);
      })
      .catch(io.fail);
  });
}
