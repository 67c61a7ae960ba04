import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Messages, type Message } from '../../src/contract/message.ts';
import { decisionFor, type Decision } from '../../src/runtime/run-loop.ts';
import { planInbound, type ThreadView } from '../../src/server/inbound.ts';
import type { WaitingCall } from '../../src/server/run-registry.ts';

/** The one rule below the protocol routes: what a client's history does to a thread. */

const id = fc.constantFrom('u1', 'u2', 'u3', 'a1', 'a2', 't1', 'x');
const callId = fc.constantFrom('c1', 'c2', 'c3', 'c4');
const stored = fc
  .uniqueArray(id, { maxLength: 5 })
  .map((ids) => ids.map((i): Message => (i.startsWith('u') ? Messages.user(i, { id: i }) : Messages.assistant(i, { id: i }))));
// Some calls wait for a person's decision, some for their schedule (a time or a trigger).
const waitingCalls = fc.uniqueArray(fc.tuple(callId, fc.boolean()), { maxLength: 3, selector: ([c]) => c }).map((ids) =>
  ids.map(
    ([c, scheduled]): WaitingCall => ({
      callId: c,
      name: `tool_${c}`,
      arguments: {},
      messageId: 'm',
      ...(scheduled
        ? { suspension: { id: `s-${c}`, action: 'schedule' }, schedule: { not_before: 1_000 } }
        : { suspension: { id: `s-${c}`, action: 'confirm' } }),
    }),
  ),
);
const candidate = fc.record({
  target: fc.oneof(
    callId,
    callId.map((c) => `s-${c}`),
  ),
  action: fc.constantFrom('resume' as const, 'cancel' as const),
  n: fc.nat(9),
});
const inboundMessage = fc.record({ id: fc.option(id, { nil: undefined }), text: fc.string({ maxLength: 4 }) });

const counter = () => {
  let n = 0;
  return () => `fresh-${++n}`;
};

describe('planInbound (the client’s history is history)', () => {
  it('property: a decision is delivered only for a call the thread waits on, the last answer per call winning; a client never wakes a scheduled call (it may cancel one)', () => {
    fc.assert(
      fc.property(
        stored,
        waitingCalls,
        fc.array(candidate, { maxLength: 6 }),
        fc.array(inboundMessage, { maxLength: 4 }),
        (history, calls, candidates, inbound) => {
          const decisions: Decision[] = candidates.map((c) => decisionFor(c.target, c.action, 0, { result: c.n }));
          const view: ThreadView = { stored: history, ...(calls.length > 0 ? { waiting: { runId: 'r', calls } } : {}) };
          const plan = planInbound(
            { messages: inbound.map((m) => ({ ...(m.id !== undefined ? { id: m.id } : {}), message: Messages.user(m.text) })), decisions },
            view,
            counter(),
          );
          const callOf = (target: string): WaitingCall | undefined => calls.find((c) => c.callId === target || c.suspension?.id === target);
          const expected = new Map<string, Decision>();
          for (const d of decisions) {
            const call = callOf(d.targetId)?.callId;
            if (call === undefined || (callOf(d.targetId)?.schedule !== undefined && d.decision.action === 'resume')) continue;
            expected.delete(call);
            expected.set(call, d);
          }
          if (expected.size === 0) {
            expect(plan.kind).not.toBe('resume');
            return;
          }
          expect(plan.kind).toBe('resume');
          if (plan.kind !== 'resume') return;
          expect(plan.decisions).toEqual([...expected.values()]);
          expect(plan.runId).toBe('r');
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: new messages are exactly those the thread does not hold, once each, in order; none gets a stored id', () => {
    fc.assert(
      fc.property(stored, fc.array(inboundMessage, { maxLength: 6 }), (history, inbound) => {
        const plan = planInbound(
          { messages: inbound.map((m) => ({ ...(m.id !== undefined ? { id: m.id } : {}), message: Messages.user(m.text) })), decisions: [] },
          { stored: history },
          counter(),
        );
        const held = new Set(history.map((m) => m.id));
        const seen = new Set<string>();
        const expected = inbound.filter((m) => {
          if (m.id === undefined) return true;
          if (held.has(m.id) || seen.has(m.id)) return false;
          seen.add(m.id);
          return true;
        });
        if (expected.length === 0) {
          expect(plan.kind).toBe('nothing');
          return;
        }
        expect(plan.kind).toBe('start');
        if (plan.kind !== 'start') return;
        expect(plan.messages.map((m) => m.content)).toEqual(expected.map((m) => Messages.user(m.text).content));
        expect(plan.messages.every((m) => m.id !== undefined && !held.has(m.id))).toBe(true);
        expect(new Set(plan.messages.map((m) => m.id)).size).toBe(plan.messages.length);
      }),
      { numRuns: 300 },
    );
  });

  it('property: a history made only of what the thread holds and answers to calls it does not wait on never resumes and never starts a duplicate', () => {
    fc.assert(
      fc.property(stored, fc.array(candidate, { maxLength: 4 }), fc.boolean(), (history, candidates, waitsOnOther) => {
        const decisions = candidates.map((c) => decisionFor(c.target, c.action, 0));
        const view: ThreadView = {
          stored: history,
          ...(waitsOnOther ? { waiting: { runId: 'r', calls: [{ callId: 'other', name: 'o', arguments: {}, messageId: 'm' }] } } : {}),
        };
        const last = history.at(-1);
        const plan = planInbound(
          {
            messages: history.filter((m) => m.role === 'user').map((m) => ({ id: m.id as string, message: m })),
            decisions,
            ...(last?.id !== undefined ? { regenerateFrom: last.id } : {}),
          },
          view,
          counter(),
        );
        if (last?.role === 'user') expect(plan).toEqual({ kind: 'start', messages: [], discardPause: true, rewindTo: last.id });
        else expect(plan).toEqual({ kind: 'nothing' });
      }),
      { numRuns: 300 },
    );
  });

  it('a decision with new messages resumes and carries them; a message without a usable id gets a fresh one', () => {
    const calls: WaitingCall[] = [{ callId: 'c1', name: 'approve', arguments: {}, messageId: 'm', suspension: { id: 's-c1', action: 'confirm' } }];
    const plan = planInbound(
      {
        messages: [
          { id: 'u1', message: Messages.user('old') },
          { id: '../bad', message: Messages.user('new') },
        ],
        decisions: [decisionFor('s-c1', 'resume', 0, { result: { approved: true } })],
      },
      { stored: [Messages.user('old', { id: 'u1' })], waiting: { runId: 'r1', calls } },
      counter(),
    );
    expect(plan).toMatchObject({ kind: 'resume', runId: 'r1', calls, messages: [{ id: 'fresh-1', content: [{ type: 'text', text: 'new' }] }] });
  });

  it('an AI SDK client sending back the preliminary output of a scheduled call does not wake it; its denial cancels it', () => {
    const calls: WaitingCall[] = [
      { callId: 'c1', name: 'remind', arguments: {}, messageId: 'm', suspension: { id: 'schedule-c1', action: 'schedule' }, schedule: { not_before: 5_000 } },
    ];
    const view: ThreadView = { stored: [Messages.user('q', { id: 'u1' })], waiting: { runId: 'r1', calls } };
    const echoed = decisionFor('c1', 'resume', 0, { result: { scheduled: 'scheduled: waits until …', not_before: 5_000 } });
    expect(planInbound({ messages: [{ id: 'u1', message: Messages.user('q') }], decisions: [echoed] }, view, counter())).toEqual({ kind: 'nothing' });
    const denied = decisionFor('schedule-c1', 'cancel', 0, { result: { approved: false } });
    expect(planInbound({ messages: [], decisions: [echoed, denied] }, view, counter())).toMatchObject({ kind: 'resume', runId: 'r1', decisions: [denied] });
  });

  it('a new turn keeps a pause unless the client discards it (seed 001 §4.4: a skipped approval is surfaced)', () => {
    const waiting = { runId: 'r', calls: [{ callId: 'c1', name: 'approve', arguments: {}, messageId: 'm' }] as WaitingCall[] };
    const turn = { messages: [{ id: 'u2', message: Messages.user('something else') }], decisions: [] };
    expect(planInbound(turn, { stored: [], waiting }, counter())).toMatchObject({ kind: 'start', discardPause: false });
    expect(planInbound({ ...turn, discardPause: true }, { stored: [], waiting }, counter())).toMatchObject({ kind: 'start', discardPause: true });
  });

  it('regenerates only from a stored user message', () => {
    const history = [Messages.user('q', { id: 'u1' }), Messages.assistant('a', { id: 'a1' })];
    expect(planInbound({ messages: [], decisions: [], regenerateFrom: 'u1' }, { stored: history }, counter())).toEqual({
      kind: 'start',
      messages: [],
      discardPause: true,
      rewindTo: 'u1',
    });
    expect(planInbound({ messages: [], decisions: [], regenerateFrom: 'a1' }, { stored: history }, counter())).toEqual({ kind: 'nothing' });
    expect(planInbound({ messages: [], decisions: [], regenerateFrom: 'zz' }, { stored: history }, counter())).toEqual({ kind: 'nothing' });
  });
});
