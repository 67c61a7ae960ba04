import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decisionFor, type Decision } from '../../src/contract/decision.ts';
import { Messages } from '../../src/contract/message.ts';
import { DecisionChannel } from '../../src/runtime/decision-channel.ts';

const d = (id: string): Decision => decisionFor(id, 'resume', 0);
const ids = (taken: unknown): unknown => (Array.isArray(taken) ? (taken as Decision[]).map((x) => x.targetId) : taken);

/** Lets every callback queued so far run (a promise settled now is seen after this). */
const settle = async (turns = 10): Promise<void> => {
  for (let i = 0; i < turns; i++) await Promise.resolve();
};

/** Whether `p` has settled after the microtasks queued now have run, and with what. */
async function peek<T>(p: Promise<T>): Promise<{ settled: boolean; value?: T }> {
  let state: { settled: boolean; value?: T } = { settled: false };
  void p.then((value) => (state = { settled: true, value }));
  await settle();
  return state;
}

describe('DecisionChannel.next', () => {
  it('waits until decisions are pushed, then resolves with them', async () => {
    const channel = new DecisionChannel(new AbortController().signal);
    const next = channel.next();
    expect((await peek(next)).settled).toBe(false);
    channel.push([d('a'), d('b')]);
    expect(ids(await next)).toEqual(['a', 'b']);
  });

  it('takes every batch pushed since the last take, flattened in the order pushed', async () => {
    const channel = new DecisionChannel(new AbortController().signal);
    channel.push([d('a')]);
    channel.push([d('b'), d('c')]);
    expect(ids(await channel.next())).toEqual(['a', 'b', 'c']);
    const later = channel.next();
    expect((await peek(later)).settled).toBe(false);
    channel.push([d('d')]);
    expect(ids(await later)).toEqual(['d']);
  });

  it('resolves undefined when the signal aborts while it waits', async () => {
    const controller = new AbortController();
    const channel = new DecisionChannel(controller.signal);
    const next = channel.next();
    controller.abort();
    channel.aborted();
    expect(await next).toBeUndefined();
  });

  it('answers undefined after an abort even with decisions queued: the run is cancelled, not resumed', async () => {
    const controller = new AbortController();
    const channel = new DecisionChannel(controller.signal);
    channel.push([d('a')]);
    controller.abort();
    expect(await channel.next()).toBeUndefined();
  });

  it("answers 'detached' once let go, now and from then on", async () => {
    const channel = new DecisionChannel(new AbortController().signal);
    const next = channel.next();
    channel.detach();
    expect(channel.detached).toBe(true);
    expect(await next).toBe('detached');
    expect(await channel.next()).toBe('detached');
  });

  it("delivers decisions queued before a detach first, then 'detached'", async () => {
    const channel = new DecisionChannel(new AbortController().signal);
    channel.push([d('a')]);
    channel.detach();
    expect(ids(await channel.next())).toEqual(['a']);
    expect(await channel.next()).toBe('detached');
  });
});

describe('DecisionChannel.takeInput', () => {
  it('gives the messages sent with decisions once, in the order sent', () => {
    const channel = new DecisionChannel(new AbortController().signal);
    const [one, two, three] = [Messages.user('one'), Messages.user('two'), Messages.user('three')];
    channel.push([d('a')], [one]);
    channel.push([d('b')], [two, three]);
    expect(channel.takeInput()).toEqual([one, two, three]);
    expect(channel.takeInput()).toEqual([]);
  });
});

describe('DecisionChannel.parked', () => {
  it('resolves true once the run waits in next(), and at once while it does', async () => {
    const channel = new DecisionChannel(new AbortController().signal);
    const early = channel.parked();
    expect((await peek(early)).settled).toBe(false);
    expect(channel.parkedNow).toBe(false);
    void channel.next();
    expect(await early).toBe(true);
    expect(channel.parkedNow).toBe(true);
    expect(await channel.parked()).toBe(true);
  });

  it('is not parked while decisions wait to be taken: it resolves when the run waits again', async () => {
    const channel = new DecisionChannel(new AbortController().signal);
    const first = channel.next();
    channel.push([d('a')]);
    expect(channel.parkedNow).toBe(false);
    const again = channel.parked();
    await first;
    expect((await peek(again)).settled).toBe(false);
    void channel.next();
    expect(await again).toBe(true);
  });

  it('resolves false when the run ends first, also when asked after the end', async () => {
    const channel = new DecisionChannel(new AbortController().signal);
    const early = channel.parked();
    channel.close();
    expect(await early).toBe(false);
    expect(await channel.parked()).toBe(false);
  });

  it('is not parked when next() answers at once (cancelled or let go)', async () => {
    const controller = new AbortController();
    const channel = new DecisionChannel(controller.signal);
    controller.abort();
    const parked = channel.parked();
    expect(await channel.next()).toBeUndefined();
    expect((await peek(parked)).settled).toBe(false);
    channel.close();
    expect(await parked).toBe(false);
  });
});

/** A step of a producer or a consumer: a push of `n` decisions, or a wait of `turns` microtasks (or a macrotask at 0). */
type Step = { readonly push: number } | { readonly wait: number };

const pause = (turns: number): Promise<void> => (turns === 0 ? new Promise((resolve) => setTimeout(resolve, 0)) : settle(turns));

describe('DecisionChannel (property)', () => {
  it('delivers decisions pushed in any interleaving with waits exactly once, in the order pushed', async () => {
    const step = fc.oneof(fc.record({ push: fc.integer({ min: 0, max: 3 }) }), fc.record({ wait: fc.integer({ min: 0, max: 4 }) }));
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { maxLength: 25 }),
        fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 25 }),
        async (producer: Step[], consumerWaits) => {
          const channel = new DecisionChannel(new AbortController().signal);
          const pushed: string[] = [];
          const got: string[] = [];
          const consumer = (async () => {
            for (let i = 0; ; i++) {
              const taken = await channel.next();
              if (taken === 'detached' || taken === undefined) return taken;
              got.push(...taken.map((x) => x.targetId));
              const w = consumerWaits[i % Math.max(1, consumerWaits.length)];
              if (w !== undefined) await pause(w);
            }
          })();
          for (const s of producer) {
            if ('push' in s) {
              const batch = Array.from({ length: s.push }, () => `d${pushed.length + 1}`).map((id) => (pushed.push(id), id));
              channel.push(batch.map(d));
            } else await pause(s.wait);
          }
          channel.detach();
          expect(await consumer).toBe('detached');
          expect(got).toEqual(pushed);
        },
      ),
      { numRuns: 150 },
    );
  });
});
