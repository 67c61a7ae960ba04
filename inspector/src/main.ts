import { TimelineFold, timelineOf, transcriptRecords, type Timeline } from '../../src/replay/timeline.ts';
import { mountChat } from './chat.ts';
import { byId, el, summaryList } from './dom.ts';
import { mountFork } from './fork.ts';
import { openStep, renderReplay, renderSegment, renderTimeline, type ReplayResult } from './render.ts';
import { exhaustive, hrefOf, parseRoute, type Route } from './route.ts';

const enc = encodeURIComponent;

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

/**
 * Where the API is: the path the server names in the page's `awaken-base-path` meta tag (an API
 * mounted in an application of one's own, `/api/awaken`), else the root. Every call goes under it.
 */
const basePath = document.querySelector<HTMLMetaElement>('meta[name="awaken-base-path"]')?.content ?? '';

/** A call of the API (`path` from `/v1/…`, under the base path): the token as a bearer header; a 401 asks for a token; another failure says what the server said. */
async function api(path: string, init: RequestInit = {}): Promise<Response> {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const headers = new Headers(init.headers);
  if (token !== null && token !== '') headers.set('authorization', `Bearer ${token}`);
  const response = await fetch(`${basePath}${path}`, { ...init, headers });
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

let recording = false;
let selectedThread: string | undefined;
let threadRuns: { readonly records: readonly RunRecord[]; readonly transcripts: readonly TranscriptEntry[] } = { records: [], transcripts: [] };
let live: AbortController | undefined;

// ---- where the page is: a URL per view, thread, run and step ----------------------------------

/** Goes to a route: the address changes, and the change (like a reload, or back and forward) shows it. */
function go(route: Route): void {
  const href = hrefOf(route);
  if (location.hash === href) void showRoute(route).catch(fail);
  else location.hash = href;
}

/** The chat's last address: back from the runs, the chat is where it was left. */
let chatAt: Route = { view: 'chat' };
/**
 * Which navigation is current: each one counts up, and an answer that comes back for an older one
 * (a thread clicked while another's runs were loading) changes nothing.
 */
let nav = 0;
async function showRoute(route: Route): Promise<void> {
  const mine = ++nav;
  if (route.view === 'chat') chatAt = route;
  errorBox.textContent = '';
  show(route.view);
  switch (route.view) {
    case 'chat':
      stopFollowing();
      if (route.thread !== undefined) await chat.openThread(route.thread);
      return;
    case 'replay':
      stopFollowing();
      await findTranscripts();
      return;
    case 'runs':
      if (route.thread === undefined) return;
      if (route.thread !== selectedThread || route.run === undefined) await selectThread(route.thread, mine);
      if (route.run !== undefined && mine === nav) await selectRun(route.run, route.step, mine);
      return;
    default:
      exhaustive(route);
  }
}

// ---- finding threads ----------------------------------------------------------------------------

interface ThreadItem {
  readonly id: string;
  readonly title?: string;
  readonly runs: number;
  readonly recorded: number;
  readonly last_run?: { readonly run_id: string; readonly agent_id: string; readonly status: string; readonly termination?: string; readonly steps: number };
}
interface ThreadPage {
  readonly items: readonly ThreadItem[];
  readonly total: number;
  readonly offset: number;
  readonly limit: number;
  readonly has_more: boolean;
}

const PAGE = 50;
let threadOffset = 0;

function findQuery(): string {
  const q = new URLSearchParams({ limit: String(PAGE), offset: String(threadOffset) });
  const text = byId<HTMLInputElement>('thread-search').value.trim();
  const agent = byId<HTMLSelectElement>('filter-agent').value;
  const status = byId<HTMLSelectElement>('filter-status').value;
  if (text !== '') q.set('q', text);
  if (agent !== '') q.set('agent_id', agent);
  if (status !== '') q.set('status', status);
  if (byId<HTMLInputElement>('filter-errors').checked) q.set('errors', 'true');
  return q.toString();
}

/** A page of the threads the caller may read (the store's and the recorded transcripts'), newest first, as the search and filters say. */
let listSeq = 0;
async function loadThreads(): Promise<void> {
  const seq = ++listSeq;
  const page = await json<ThreadPage>(`/v1/inspector/threads?${findQuery()}`);
  // An answer to an older search or page that came late changes nothing.
  if (seq !== listSeq) return;
  const list = byId('threads');
  list.replaceChildren(
    ...page.items.map((t) => {
      const label = `${t.id}${t.recorded > 0 ? ` (${t.recorded} recorded)` : ''}`;
      const button = el('button', { type: 'button', 'data-thread': t.id, 'aria-current': String(t.id === selectedThread) }, label);
      button.addEventListener('click', () => go({ view: 'runs', thread: t.id }));
      const last = t.last_run;
      const meta = [
        t.title,
        last !== undefined ? `${last.agent_id} · ${last.termination ?? last.status}` : undefined,
        t.runs > 0 ? `${t.runs} run${t.runs === 1 ? '' : 's'}` : undefined,
      ].filter((x) => x !== undefined && x !== '');
      return el('li', {}, button, meta.length > 0 ? el('span', { class: `meta${last?.termination === 'error' ? ' bad' : ''}` }, meta.join(' · ')) : null);
    }),
  );
  if (page.items.length === 0)
    list.replaceChildren(el('li', { class: 'note' }, page.total === 0 && findQuery() === `limit=${PAGE}&offset=0` ? 'No threads yet.' : 'No thread matches.'));
  const first = page.total === 0 ? 0 : page.offset + 1;
  byId('threads-page').textContent = `${first}–${page.offset + page.items.length} of ${page.total}`;
  byId<HTMLButtonElement>('threads-prev').disabled = page.offset === 0;
  byId<HTMLButtonElement>('threads-next').disabled = !page.has_more;
  say(`${page.total} thread${page.total === 1 ? '' : 's'}`);
}

/** The agents the server runs, for the filter. */
async function loadAgents(): Promise<void> {
  const caps = await json<{ agents: readonly string[] }>('/v1/capabilities');
  const pick = byId<HTMLSelectElement>('filter-agent');
  pick.replaceChildren(el('option', { value: '' }, 'any'), ...caps.agents.map((a) => el('option', { value: a }, a)));
}

function mark(listId: string, attr: string, value: string): void {
  for (const b of byId(listId).querySelectorAll('button')) b.setAttribute('aria-current', String(b.getAttribute(attr) === value));
}

async function selectThread(id: string, mine: number): Promise<void> {
  stopFollowing();
  selectedThread = id;
  mark('threads', 'data-thread', id);
  byId('runs-title').textContent = `Runs of ${id}`;
  byId('run-title').textContent = 'Run';
  byId('run').replaceChildren(el('p', { class: 'note' }, 'Pick a run to see its timeline.'));
  const [stored, recorded] = await Promise.all([
    json<{ items: RunRecord[] }>(`/v1/runs?thread_id=${enc(id)}&limit=200`).catch((e: unknown) => {
      if (e instanceof Unauthorized) throw e;
      return { items: [] as RunRecord[] };
    }),
    json<{ recording: boolean; items: TranscriptEntry[] }>(`/v1/inspector/transcripts?thread_id=${enc(id)}`),
  ]);
  if (mine !== nav) return;
  recording = recorded.recording;
  byId('recording-note').textContent = recording ? '' : 'This server does not record runs: start it with --record DIR to see their timelines.';
  threadRuns = { records: stored.items, transcripts: recorded.items };
  const runIds = [...new Set([...stored.items.map((r) => r.run_id), ...recorded.items.map((t) => t.run_id)])];
  byId('runs-note').textContent = runIds.length === 0 ? 'No runs on this thread yet.' : '';
  byId<HTMLButtonElement>('follow').hidden = false;
  byId('runs').replaceChildren(
    ...runIds.map((runId) => {
      const record = stored.items.find((r) => r.run_id === runId);
      // A run let go while parked and taken up again has a transcript per segment, shown in order.
      const segments = recorded.items.filter((t) => t.run_id === runId);
      const kept = segments.length === 0 ? 'no transcript' : segments.length === 1 ? 'recorded' : `recorded in ${segments.length} segments`;
      const label = [runId, record?.termination?.type ?? record?.status, record !== undefined ? `${record.steps} steps` : '', kept]
        .filter((x) => x !== undefined && x !== '')
        .join(' · ');
      const button = el('button', { type: 'button', 'data-run': runId }, label);
      button.addEventListener('click', () => go({ view: 'runs', thread: id, run: runId }));
      return el('li', {}, button);
    }),
  );
}

async function selectRun(runId: string, step: number | undefined, mine: number): Promise<void> {
  stopFollowing();
  const threadId = selectedThread as string;
  mark('runs', 'data-run', runId);
  byId('run-title').textContent = `Run ${runId}`;
  const view = byId('run');
  const record = threadRuns.records.find((r) => r.run_id === runId);
  const segments = threadRuns.transcripts.filter((t) => t.run_id === runId).sort((a, b) => a.segment - b.segment);
  if (segments.length === 0) {
    view.replaceChildren(
      summaryList([
        ['Run', runId],
        ['Status', record?.status ?? ''],
        ['Ended', record?.termination?.type ?? ''],
        ['Steps', record !== undefined ? String(record.steps) : ''],
      ]),
      el(
        'p',
        { class: 'note' },
        record === undefined
          ? `No run ${runId} on this thread.`
          : recording
            ? 'This run has no transcript (it was served before recording began).'
            : 'No transcript: start awaken serve with --record DIR to keep the timeline of every run.',
      ),
    );
    return;
  }
  const names = segments.map((t) => t.name).join(', ');
  say(`loading ${names}…`);
  const texts = await Promise.all(segments.map(async (t) => (await api(`/v1/inspector/transcripts/${enc(t.name)}`)).text()));
  if (mine !== nav) return;
  const timelines = texts.map((text) => timelineOf(transcriptRecords(text)));
  // Opening a step puts it in the address, without a new history entry per step looked at.
  const onStepOpen = (index: number): void => history.replaceState(null, '', hrefOf({ view: 'runs', thread: threadId, run: runId, step: index }));
  view.replaceChildren(
    // One transcript of a run that started is its whole timeline; anything else is shown segment by segment.
    ...(timelines.length === 1 && timelines[0]?.resumed !== true
      ? [renderTimeline(timelines[0] as Timeline, { onStepOpen })]
      : timelines.map((t) => renderSegment(t))),
  );
  say(`run ${runId}: ${names}`);
  if (step !== undefined && openStep(view, step)) return;
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
      const response = await api(`/v1/threads/${encodeURIComponent(threadId)}/stream`, {
        signal: controller.signal,
        headers: lastId !== undefined ? { 'last-event-id': lastId } : {},
      });
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
          if (event.event_type === 'run_finish')
            say(
              `following ${threadId}: run ${fold.timeline.run_id ?? ''} finished (${(fold.timeline.termination as { type?: string } | undefined)?.type ?? ''})`,
            );
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

const PICKED = 50;
let findSeq = 0;

/** The recorded transcripts whose name, thread or run id holds the search text (the first 50, newest first). */
async function findTranscripts(): Promise<void> {
  const seq = ++findSeq;
  const text = byId<HTMLInputElement>('replay-search').value.trim();
  const found = await json<{ recording: boolean; items: TranscriptEntry[]; total: number }>(
    `/v1/inspector/transcripts?limit=${PICKED}${text !== '' ? `&q=${enc(text)}` : ''}`,
  );
  // An answer to an older search that came late changes nothing.
  if (seq !== findSeq) return;
  const pick = byId<HTMLSelectElement>('replay-pick');
  const kept = pick.value;
  pick.replaceChildren(el('option', { value: '' }, '(none)'), ...found.items.map((t) => el('option', { value: t.name }, t.name)));
  if (found.items.some((t) => t.name === kept)) pick.value = kept;
  recording = found.recording;
  byId('recording-note').textContent = recording ? '' : 'This server does not record runs: start it with --record DIR to see their timelines.';
  byId('replay-count').textContent = !found.recording
    ? 'This server does not record runs (start it with --record DIR).'
    : found.total === 0
      ? text === ''
        ? 'No recorded transcripts yet.'
        : 'No recorded transcript matches.'
      : found.total > found.items.length
        ? `${found.items.length} of ${found.total} shown, newest first: search to narrow them.`
        : `${found.total} recorded transcript${found.total === 1 ? '' : 's'}.`;
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
  const result = (await (
    await api('/v1/inspector/replay', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  ).json()) as ReplayResult;
  byId('replay-result').replaceChildren(renderReplay(result, source));
  say(`replayed ${source}: ${result.report.identical ? 'identical' : 'diverged'}`);
}

// ---- the page -----------------------------------------------------------------------------------

function show(view: Route['view']): void {
  byId('chat-view').hidden = view !== 'chat';
  byId('runs-view').hidden = view !== 'runs';
  byId('replay-view').hidden = view !== 'replay';
  byId('show-chat').setAttribute('aria-pressed', String(view === 'chat'));
  byId('show-runs').setAttribute('aria-pressed', String(view === 'runs'));
  byId('show-replay').setAttribute('aria-pressed', String(view === 'replay'));
}

/** Calls `f` once typing has paused, so a search is sent per pause, not per key. */
function debounced(f: () => void, ms = 200): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(f, ms);
  };
}

const chat = mountChat(byId('chat-view'), {
  api,
  onThread: (threadId) => {
    chatAt = { view: 'chat', thread: threadId };
    history.replaceState(null, '', hrefOf(chatAt));
  },
  onRunFinished: () => void loadThreads().catch(fail),
});

byId('show-chat').addEventListener('click', () => go(chatAt));
byId('show-runs').addEventListener('click', () => go(selectedThread !== undefined ? { view: 'runs', thread: selectedThread } : { view: 'runs' }));
byId('show-replay').addEventListener('click', () => go({ view: 'replay' }));
byId('follow').addEventListener('click', () => {
  if (live !== undefined) stopFollowing();
  else if (selectedThread !== undefined) void follow(selectedThread).catch(fail);
});
const refind = (): void => {
  threadOffset = 0;
  void loadThreads().catch(fail);
};
byId<HTMLFormElement>('find').addEventListener('submit', (e) => {
  e.preventDefault();
  refind();
});
byId('thread-search').addEventListener('input', debounced(refind));
for (const id of ['filter-agent', 'filter-status', 'filter-errors']) byId(id).addEventListener('change', refind);
byId('threads-prev').addEventListener('click', () => {
  threadOffset = Math.max(0, threadOffset - PAGE);
  void loadThreads().catch(fail);
});
byId('threads-next').addEventListener('click', () => {
  threadOffset += PAGE;
  void loadThreads().catch(fail);
});
byId('replay-search').addEventListener(
  'input',
  debounced(() => void findTranscripts().catch(fail)),
);
byId<HTMLFormElement>('replay-form').addEventListener('submit', (e) => void replay(e).catch(fail));
mountFork({ api, say, fail, error: (text) => (errorBox.textContent = text) });
addEventListener('hashchange', () => void showRoute(parseRoute(location.hash)).catch(fail));

/** The page as the address says, once the server answers (again after a token is given). */
async function start(): Promise<void> {
  await Promise.all([loadThreads(), loadAgents(), findTranscripts()]);
  await showRoute(parseRoute(location.hash));
}
tokenForm.addEventListener('submit', (e) => {
  e.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, tokenInput.value);
  tokenInput.value = '';
  tokenForm.hidden = true;
  void start().catch(fail);
});
void start().catch(fail);
