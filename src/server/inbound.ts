import type { JsonValue } from '../contract/json.ts';
import type { Message } from '../contract/message.ts';
import type { InboundRun } from '../contract/inbound.ts';
import type { Decision } from '../contract/decision.ts';
import { isValidId } from '../runtime/store.ts';
import type { ServerParts } from './http-support.ts';
import type { RegistryResult, WaitingCall } from './run-registry.ts';
import { unreachable } from '../contract/never.ts';

/** What the server knows of a thread when a protocol request arrives. */
export interface ThreadView {
  /** The thread's stored messages (empty for a new thread). */
  readonly stored: readonly Message[];
  /** The parked run and the calls it waits on, when the thread is paused. */
  readonly waiting?: { readonly runId: string; readonly calls: readonly WaitingCall[] };
}

/** What a protocol request does to a thread. */
export type InboundPlan =
  /** Decisions for the parked run (and new messages that join the thread after the calls they settle). */
  | {
      readonly kind: 'resume';
      readonly runId: string;
      readonly decisions: readonly Decision[];
      readonly messages: readonly Message[];
      readonly calls: readonly WaitingCall[];
    }
  /**
   * A new run on the new messages, or on none after a rewind. A thread paused on a call nobody
   * answered refuses it (409 `thread_paused`, seed 001 §4.4) unless the pause is discarded: on the
   * client's explicit word (`discardPause`), or by a regeneration (the answer that asked is replaced).
   */
  | { readonly kind: 'start'; readonly messages: readonly Message[]; readonly discardPause: boolean; readonly rewindTo?: string }
  | { readonly kind: 'nothing' };

/**
 * The one rule for what a protocol client sends back (AI SDK, AG-UI, A2A): its history is history.
 *
 * - A decision is delivered only when it answers a call the thread waits on now (by call id or
 *   suspension id; the last answer for a call wins). A scheduled call is never resumed from here
 *   (its time or trigger wakes it); a client may cancel it. Tool outputs of calls the server already ran,
 *   approvals already answered, results of another run: history, never an error.
 * - A message is new when the thread does not hold its id (a message without an id is always new);
 *   it gets a fresh id when it has none or an unusable one.
 * - With nothing new and no decision, a history ending with a stored user message asks for the
 *   answer to it again (`regenerateFrom`): the thread is rewound to that message.
 * - A new turn on a thread paused on an unanswered call is refused (the skipped approval is
 *   surfaced, not dropped), unless the client says `discardPause` or regenerates.
 *
 * Pure: the same request and view give the same plan (`newId` is only called for new messages).
 */
export function planInbound(inbound: InboundRun, view: ThreadView, newId: () => string): InboundPlan {
  const stored = new Set(view.stored.map((m) => m.id));
  const messages: Message[] = [];
  const seen = new Set<string>();
  for (const m of inbound.messages) {
    if (m.id !== undefined && (stored.has(m.id) || seen.has(m.id))) continue;
    if (m.id !== undefined) seen.add(m.id);
    messages.push({ ...m.message, id: m.id !== undefined && isValidId(m.id) ? m.id : newId() });
  }

  const waiting = view.waiting;
  if (waiting !== undefined) {
    const callOf = new Map<string, WaitingCall>();
    for (const c of waiting.calls) {
      callOf.set(c.callId, c);
      if (c.suspension !== undefined && c.suspension.id.trim() !== '') callOf.set(c.suspension.id, c);
    }
    const byCall = new Map<string, Decision>();
    for (const d of inbound.decisions) {
      const waited = callOf.get(d.targetId);
      // A scheduled call is woken by its time or its trigger, never by a client: an AI SDK client
      // sends its preliminary output back as an answer. A client may still decline one.
      if (waited === undefined || (waited.schedule !== undefined && d.decision.action === 'resume')) continue;
      const call = waited.callId;
      byCall.delete(call);
      byCall.set(call, d);
    }
    if (byCall.size > 0) return { kind: 'resume', runId: waiting.runId, decisions: [...byCall.values()], messages, calls: waiting.calls };
  }

  const discardPause = inbound.discardPause === true;
  if (messages.length > 0) return { kind: 'start', messages, discardPause };
  const from = inbound.regenerateFrom;
  if (from !== undefined && view.stored.some((m) => m.id === from && m.role === 'user'))
    return { kind: 'start', messages: [], discardPause: true, rewindTo: from };
  return { kind: 'nothing' };
}

/** Where a protocol request's stream starts, and what the client already holds of the run. */
export interface AcceptedInbound {
  readonly runId: string;
  /** The thread log's sequence number before the first frame the response streams. */
  readonly since: number;
  /** Set when the request resumed a parked run: the calls it waited on (the client holds them). */
  readonly resumed?: { readonly runId: string; readonly calls: readonly WaitingCall[] };
}

/**
 * Applies the one rule (`planInbound`) to a thread: resumes its parked run, or starts a run (a
 * regeneration rewinds the thread). `nothing` when the request brings nothing new, no decision for
 * a waiting call and asks for no new answer.
 */
export async function acceptInbound(
  parts: ServerParts,
  threadId: string,
  agentId: string | undefined,
  inbound: InboundRun,
): Promise<RegistryResult<AcceptedInbound> | { readonly ok: 'nothing' }> {
  const { store, registry, runtime } = parts;
  const stored = (await store.loadThread(threadId))?.messages ?? [];
  // A run parked by a process that is gone is taken up here, so the request's decisions reach it.
  await registry.adopt(threadId);
  const waiting = registry.waiting(threadId);
  const plan = planInbound(inbound, { stored, ...(waiting !== undefined ? { waiting } : {}) }, () => runtime.env.ids.next('message'));
  switch (plan.kind) {
    case 'nothing':
      return { ok: 'nothing' };
    case 'resume': {
      const since = registry.log(threadId).lastSeq;
      const r = registry.decide(plan.runId, plan.decisions, plan.messages);
      if (!r.ok) return r;
      return { ok: true, value: { runId: r.value.runId, since, resumed: { runId: r.value.runId, calls: plan.calls } } };
    }
    case 'start': {
      const started = await registry.start({
        threadId,
        ...(agentId !== undefined ? { agentId } : {}),
        messages: plan.messages,
        discardPause: plan.discardPause,
        ...(plan.rewindTo !== undefined ? { rewindTo: plan.rewindTo } : {}),
        ...(inbound.clientTools !== undefined ? { clientTools: inbound.clientTools } : {}),
        ...(inbound.clientContext !== undefined ? { clientContext: inbound.clientContext } : {}),
        ...(isObject(inbound.state) && Object.keys(inbound.state).length > 0 ? { clientState: inbound.state } : {}),
      });
      if (!started.ok) return started;
      return { ok: true, value: { runId: started.value.runId, since: started.value.fromSeq } };
    }
    default:
      return unreachable(plan);
  }
}

const isObject = (v: JsonValue | undefined): v is { readonly [key: string]: JsonValue } => typeof v === 'object' && v !== null && !Array.isArray(v);
