import { TimelineFold, timelineOf, transcriptRecords, type Timeline } from '../../src/replay/timeline.ts';
import { byId, el, summaryList } from './dom.ts';
import { renderReplay, renderSegment, renderTimeline, type ReplayResult } from './render.ts';

/**
 * The run inspector's page (docs/inspector.md): threads → runs → a run's timeline, a live view of a
 * thread, and a replay view. It reads the server's API from its own origin; with API tokens
 * configured it asks for one, keeps it for the tab (sessionStorage, never in a URL) and sends it as
 * a bearer header — also to follow a stream, which it reads with `fetch` (an EventSource cannot
 * send a header).
 */

const TOKEN_KEY = 'awaken.inspector.token';

interface TranscriptEntry {
  readonly name: string;
  readonly thread_id: string;
  readonly run_id: string;
  readonly segment: number;
  readonly bytes: number;
}
interface RunRecord {
  readonly run_id: string;
  readonly thread_id: string;
  readonly status: string;
  readonly steps: number;
  readonly termination?: { readonly type: string };
}

const status = byId('status');
const errorBox = byId('error');
const tokenForm = byId<HTMLFormElement>('token-form');
const tokenInput = byId<HTMLInputElement>('token');

class Unauthorized extends Error {}

function say(text: string): void {
  status.textContent = text;
}

function fail(e: unknown): void {
  if (e instanceof Unauthorized) return;
  errorBox.textContent = e instanceof Error ? e.message : String(e);
}

/** A call of the API: the token as a bearer header; a 401 asks for a token; another failure says what the server said. */
async function api(path: string, init: RequestInit = {}): Promise<Response> {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const headers = new Headers(init.headers);
  if (token !== null && token !== '') headers.set('authorization', `Bearer ${token}`);
  const response = await fetch(path, { ...init, headers });
  if (response.status === 401) {
    tokenForm.hidden = false;
    say('This server needs an API token: enter one above.');
    tokenInput.focus();
    throw new Unauthorized('unauthorized');
  }
  if (!response.ok) {
    const body = (await response.json().catch(() => ({}))) as { error?: string };
    throw new Error(`${path}: ${response.status} ${body.error ?? response.statusText}`);
  }
  return response;
}

const json = async <T>(path: string): Promise<T> => (await (await api(path)).json()) as T;

let transcripts: TranscriptEntry[] = [];
let recording = false;
let selectedThread: string | undefined;
let live: AbortController | undefined;

/** The threads of the store and of the recorded transcripts, newest first. */
async function loadThreads(): Promise<void> {
  errorBox.textContent = '';
  const [threads, recorded] = await Promise.all([json<{ items: { id: string; title?: string }[] }>('/v1/threads?limit=200'), json<{ recording: boolean; items: TranscriptEntry[] }>('/v1/inspector/transcripts')]);
  transcripts = recorded.items;
  recording = recorded.recording;
  byId('recording-note').textContent = recording ? '' : 'This server does not record runs: start it with --record DIR to see their timelines.';
  const ids = [...new Set([...threads.items.map((t) => t.id), ...transcripts.map((t) => t.thread_id)])];
  const list = byId('threads');
  list.replaceChildren(
    ...ids.map((id) => {
      const count = transcripts.filter((t) => t.thread_id === id).length;
      const button = el('button', { type: 'button', 'data-thread': id }, id, count > 0 ? ` (${count} recorded)` : '');
      button.addEventListener('click', () => void selectThread(id).catch(fail));
      return el('li', {}, button);
    }),
  );
  if (ids.length === 0) list.replaceChildren(el('li', { class: 'note' }, 'No threads yet.'));
  fillReplayPicker();
  say(`${ids.length} thread${ids.length === 1 ? '' : 's'}`);
}

function mark(listId: string, attr: string, value: string): void {
  for (const b of byId(listId).querySelectorAll('button')) b.setAttribute('aria-current', String(b.getAttribute(attr) === value));
}

async function selectThread(id: string): Promise<void> {
  stopFollowing();
  selectedThread = id;
  mark('threads', 'data-thread', id);
  byId('runs-title').textContent = `Runs of ${id}`;
  const stored = await json<{ items: RunRecord[] }>(`/v1/runs?thread_id=${encodeURIComponent(id)}&limit=200`).catch((e: unknown) => {
    if (e instanceof Unauthorized) throw e;
    return { items: [] as RunRecord[] };
  });
  const recorded = transcripts.filter((t) => t.thread_id === id);
  const runIds = [...new Set([...stored.items.map((r) => r.run_id), ...recorded.map((t) => t.run_id)])];
  byId('runs-note').textContent = runIds.length === 0 ? 'No runs on this thread yet.' : '';
  const follow = byId<HTMLButtonElement>('follow');
  follow.hidden = false;
  byId('runs').replaceChildren(
    ...runIds.map((runId) => {
      const record = stored.items.find((r) => r.run_id === runId);
      // A run let go while parked and taken up again has a transcript per segment, shown in order.
      const segments = recorded.filter((t) => t.run_id === runId).sort((a, b) => a.segment - b.segment);
      const kept = segments.length === 0 ? 'no transcript' : segments.length === 1 ? 'recorded' : `recorded in ${segments.length} segments`;
      const label = [runId, record?.termination?.type ?? record?.status, record !== undefined ? `${record.steps} steps` : '', kept].filter((x) => x !== undefined && x !== '').join(' · ');
      const button = el('button', { type: 'button', 'data-run': runId }, label);
      button.addEventListener('click', () => void selectRun(runId, record, segments).catch(fail));
      return el('li', {}, button);
    }),
  );
}

async function selectRun(runId: string, record: RunRecord | undefined, segments: readonly TranscriptEntry[]): Promise<void> {
  stopFollowing();
  mark('runs', 'data-run', runId);
  byId('run-title').textContent = `Run ${runId}`;
  const view = byId('run');
  if (segments.length === 0) {
    view.replaceChildren(
      summaryList([
        ['Run', runId],
        ['Status', record?.status ?? ''],
        ['Ended', record?.termination?.type ?? ''],
        ['Steps', record !== undefined ? String(record.steps) : ''],
      ]),
      el('p', { class: 'note' }, recording ? 'This run has no transcript (it was served before recording began).' : 'No transcript: start awaken serve with --record DIR to keep the timeline of every run.'),
    );
    return;
  }
  const names = segments.map((t) => t.name).join(', ');
  say(`loading ${names}…`);
  const texts = await Promise.all(segments.map(async (t) => (await api(`/v1/inspector/transcripts/${encodeURIComponent(t.name)}`)).text()));
  const timelines = texts.map((text) => timelineOf(transcriptRecords(text)));
  view.replaceChildren(
    // One transcript of a run that started is its whole timeline; anything else is shown segment by segment.
    ...(timelines.length === 1 && timelines[0]?.resumed !== true ? [renderTimeline(timelines[0] as Timeline)] : timelines.map((t) => renderSegment(t))),
  );
  say(`run ${runId}: ${names}`);
  view.querySelector('summary')?.focus();
}

// ---- following a thread live --------------------------------------------------------------------

function stopFollowing(): void {
  live?.abort();
  live = undefined;
  byId('follow').textContent = 'Follow this thread live';
}

/** Reads a thread's stream with fetch, folding each event into the current run's timeline; reconnects from the last frame it had. */
async function follow(threadId: string): Promise<void> {
  stopFollowing();
  const controller = new AbortController();
  live = controller;
  byId('follow').textContent = 'Stop following';
  byId('run-title').textContent = `Live: ${threadId}`;
  const view = byId('run');
  let fold: TimelineFold | undefined;
  let lastId: string | undefined;
  let pending = false;
  const render = (): void => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      if (fold !== undefined && live === controller) view.replaceChildren(renderTimeline(fold.timeline, { live: true }));
    });
  };
  view.replaceChildren(el('p', { class: 'note' }, 'Waiting for the next run on this thread…'));
  while (!controller.signal.aborted) {
    try {
      const response = await api(`/v1/threads/${encodeURIComponent(threadId)}/stream`, { signal: controller.signal, headers: lastId !== undefined ? { 'last-event-id': lastId } : {} });
      say(`following ${threadId}${lastId !== undefined ? ` (reconnected after frame ${lastId})` : ''}`);
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let id: string | undefined;
          let kind = 'message';
          const data: string[] = [];
          for (const line of frame.split('\n')) {
            if (line.startsWith('id:')) id = line.slice(3).trim();
            else if (line.startsWith('event:')) kind = line.slice(6).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
          }
          if (id !== undefined) lastId = id;
          if (data.length === 0) continue;
          if (kind === 'resync') {
            say(`following ${threadId}: resynced at frame ${id ?? '?'} (frames in between were no longer kept)`);
            continue;
          }
          const event = JSON.parse(data.join('\n')) as { event_type?: string };
          if (event.event_type === 'run_start' || fold === undefined) fold = new TimelineFold();
          fold.record({ type: 'event', event });
          if (event.event_type === 'run_finish') say(`following ${threadId}: run ${fold.timeline.run_id ?? ''} finished (${(fold.timeline.termination as { type?: string } | undefined)?.type ?? ''})`);
          render();
        }
      }
    } catch (e) {
      if (controller.signal.aborted || e instanceof Unauthorized) return;
      say(`following ${threadId}: connection lost, reconnecting…`);
    }
    if (controller.signal.aborted) return;
    say(`following ${threadId}: reconnecting${lastId !== undefined ? ` from frame ${lastId}` : ''}…`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

// ---- replay -------------------------------------------------------------------------------------

function fillReplayPicker(): void {
  const pick = byId<HTMLSelectElement>('replay-pick');
  pick.replaceChildren(el('option', { value: '' }, '(none)'), ...transcripts.map((t) => el('option', { value: t.name }, t.name)));
}

async function replay(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  errorBox.textContent = '';
  const file = byId<HTMLInputElement>('replay-file').files?.[0];
  const name = byId<HTMLSelectElement>('replay-pick').value;
  if (file === undefined && name === '') {
    errorBox.textContent = 'Choose a transcript file, or pick a recorded one.';
    return;
  }
  const body = file !== undefined ? { transcript: await file.text() } : { name };
  const source = file !== undefined ? file.name : name;
  say(`replaying ${source}…`);
  const result = (await (await api('/v1/inspector/replay', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json()) as ReplayResult;
  byId('replay-result').replaceChildren(renderReplay(result, source));
  say(`replayed ${source}: ${result.report.identical ? 'identical' : 'diverged'}`);
}

// ---- the page -----------------------------------------------------------------------------------

function show(view: 'runs' | 'replay'): void {
  byId('runs-view').hidden = view !== 'runs';
  byId('replay-view').hidden = view !== 'replay';
  byId('show-runs').setAttribute('aria-pressed', String(view === 'runs'));
  byId('show-replay').setAttribute('aria-pressed', String(view === 'replay'));
}

byId('show-runs').addEventListener('click', () => show('runs'));
byId('show-replay').addEventListener('click', () => show('replay'));
byId('follow').addEventListener('click', () => {
  if (live !== undefined) stopFollowing();
  else if (selectedThread !== undefined) void follow(selectedThread).catch(fail);
});
byId<HTMLFormElement>('replay-form').addEventListener('submit', (e) => void replay(e).catch(fail));
tokenForm.addEventListener('submit', (e) => {
  e.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, tokenInput.value);
  tokenInput.value = '';
  tokenForm.hidden = true;
  void loadThreads().catch(fail);
});
void loadThreads().catch(fail);
