import type { JsonValue } from '../../contract/json.ts';
import type { AgUiEvent } from './encoder.ts';

/**
 * Open Generative UI on an AG-UI stream (seed 001 §9.12, after CopilotKit's
 * `OpenGenerativeUIMiddleware`): the model calls the client's `generateSandboxedUi` tool with HTML,
 * CSS and JS; the server runs none of it, but turns the call's arguments into one `ACTIVITY_SNAPSHOT`
 * and a run of `ACTIVITY_DELTA`s (JSON Patch `add`s) of activity `open-generative-ui`, which the
 * page renders in a sandboxed iframe as they come.
 *
 * Three shapes a front end gets wrong silently are kept: the snapshot comes before any delta and
 * only once; every `add` carries a `value` (a `null` argument sends no patch of its own, only its
 * `…Complete` mark); `html` is an array (`/html` made empty, then `/html/-` appended). A call's
 * arguments are read once they are complete (at its `TOOL_CALL_END`; a provider may stream them in
 * pieces before), in the order the tool's contract gives them — `initialHeight`,
 * `placeholderMessages`, `css`, `html`, `jsFunctions`, `jsExpressions` — whatever order the model
 * wrote: the events and their order are the middleware's for arguments written in that order. So
 * the page's iframe appears whole rather than growing as the model writes (the middleware parses
 * the pieces as they come).
 */

export const OPEN_GENERATIVE_UI_TOOL = 'generateSandboxedUi';
export const OPEN_GENERATIVE_UI_ACTIVITY = 'open-generative-ui';

/** The calls being held (their start and argument events, the arguments so far), by call id. */
export interface OpenGenerativeUiState {
  readonly calls: { readonly [callId: string]: { readonly held: readonly AgUiEvent[]; readonly args: string } };
}

export const initialOpenGenerativeUiState = (): OpenGenerativeUiState => ({ calls: {} });

type Args = { readonly [key: string]: JsonValue };

/** The activity events of one call's whole arguments, snapshot first (`messageId` `<callId>-activity`). */
export function openGenerativeUiEvents(callId: string, args: Args): AgUiEvent[] {
  const messageId = `${callId}-activity`;
  const height = typeof args['initialHeight'] === 'number' ? args['initialHeight'] : undefined;
  const out: AgUiEvent[] = [
    {
      type: 'ACTIVITY_SNAPSHOT',
      messageId,
      activityType: OPEN_GENERATIVE_UI_ACTIVITY,
      content: { ...(height !== undefined ? { initialHeight: height } : {}), generating: true },
    },
  ];
  const add = (path: string, value: JsonValue | undefined): void => {
    if (value === undefined) return;
    out.push({ type: 'ACTIVITY_DELTA', messageId, activityType: OPEN_GENERATIVE_UI_ACTIVITY, patch: [{ op: 'add', path, value }] });
  };
  const text = (v: JsonValue | undefined): string | undefined => (v === undefined || v === null ? undefined : typeof v === 'string' ? v : JSON.stringify(v));
  const items = (key: string): void => {
    const v = args[key];
    if (!Array.isArray(v)) return;
    add(`/${key}`, []);
    for (const item of v) add(`/${key}/-`, text(item) ?? 'null');
  };
  items('placeholderMessages');
  if (Object.hasOwn(args, 'css')) {
    add('/css', text(args['css']));
    add('/cssComplete', true);
  }
  if (Object.hasOwn(args, 'html')) {
    const html = text(args['html']) ?? '';
    if (html !== '') {
      add('/html', []);
      add('/html/-', html);
    }
    add('/htmlComplete', true);
  }
  if (Object.hasOwn(args, 'jsFunctions')) {
    add('/jsFunctions', text(args['jsFunctions']));
    add('/jsFunctionsComplete', true);
  }
  if (Array.isArray(args['jsExpressions'])) {
    items('jsExpressions');
    add('/jsExpressionsComplete', true);
  }
  add('/generating', false);
  return out;
}

/** A call's arguments as an object; undefined when they are not one (a call cut off mid-way by an error or a cancel). */
const parseArgs = (text: string): Args | undefined => {
  try {
    const v = JSON.parse(text) as JsonValue;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
};

/**
 * One step over the events an AG-UI stream is about to send: a `generateSandboxedUi` call's start and
 * arguments are held until its end, then sent after its activity's snapshot, its deltas after them,
 * then its end; every other event passes as it is.
 */
export function transformOpenGenerativeUi(state: OpenGenerativeUiState, events: readonly AgUiEvent[]): [OpenGenerativeUiState, AgUiEvent[]] {
  let calls = state.calls;
  const out: AgUiEvent[] = [];
  for (const e of events) {
    const id = typeof e['toolCallId'] === 'string' ? e['toolCallId'] : undefined;
    const held = id !== undefined ? calls[id] : undefined;
    if (e.type === 'TOOL_CALL_START' && id !== undefined && e['toolCallName'] === OPEN_GENERATIVE_UI_TOOL) {
      calls = { ...calls, [id]: { held: [e], args: '' } };
    } else if (e.type === 'TOOL_CALL_ARGS' && id !== undefined && held !== undefined) {
      calls = { ...calls, [id]: { held: [...held.held, e], args: held.args + (typeof e['delta'] === 'string' ? e['delta'] : '') } };
    } else if (e.type === 'TOOL_CALL_END' && id !== undefined && held !== undefined) {
      const args = parseArgs(held.args);
      // A call whose arguments never completed draws nothing: its events go as they were.
      const [snapshot, ...deltas] = args === undefined ? [] : openGenerativeUiEvents(id, args);
      if (snapshot !== undefined) out.push(snapshot);
      out.push(...held.held, ...deltas, e);
      const { [id]: _done, ...rest } = calls;
      calls = rest;
    } else {
      out.push(e);
    }
  }
  return [calls === state.calls ? state : { calls }, out];
}

/** What a stream that ends with calls still held sends: their events as they were (no activity). */
export function finishOpenGenerativeUi(state: OpenGenerativeUiState): AgUiEvent[] {
  return Object.values(state.calls).flatMap((c) => c.held);
}
