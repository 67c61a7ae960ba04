import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  claimOrder,
  DEFAULT_MAILBOX_CONFIG,
  jobInvariantViolations,
  Jobs,
  mailboxConfigProblem,
  retryDelay,
  TERMINAL_JOB_STATUSES,
  type MailboxConfig,
  type MailboxJob,
} from '../../../src/core/mailbox/job.ts';

const job = (fields: Partial<MailboxJob> = {}): MailboxJob => ({
  job_id: 'j1',
  mailbox_id: 't1',
  agent_id: 'a',
  messages: [],
  origin: 'user',
  priority: 128,
  generation: 0,
  status: 'queued',
  available_at: 0,
  attempt_count: 0,
  max_attempts: 5,
  created_at: 0,
  updated_at: 0,
  ...fields,
});

type Op =
  | { op: 'claim'; token: string; now: number }
  | { op: 'ack' | 'extend'; token: string; now: number }
  | { op: 'nack'; token: string; now: number; permanent: boolean }
  | { op: 'cancel' | 'expire'; now: number }
  | { op: 'supersede'; now: number };

const token = fc.constantFrom('A', 'B');
const now = fc.integer({ min: 0, max: 100_000 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('claim' as const), token, now }),
  fc.record({ op: fc.constantFrom('ack' as const, 'extend' as const), token, now }),
  fc.record({ op: fc.constant('nack' as const), token, now, permanent: fc.boolean() }),
  fc.record({ op: fc.constantFrom('cancel' as const, 'expire' as const), now }),
  fc.record({ op: fc.constant('supersede' as const), now }),
);

function apply(j: MailboxJob, o: Op) {
  switch (o.op) {
    case 'claim':
      return Jobs.claim(j, o.token, `worker-${o.token}`, 1000, o.now);
    case 'ack':
      return Jobs.ack(j, o.token, o.now);
    case 'extend':
      return Jobs.extendLease(j, o.token, 1000, o.now);
    case 'nack':
      return Jobs.nack(j, o.token, 'boom', o.permanent, o.now, DEFAULT_MAILBOX_CONFIG);
    case 'cancel':
      return Jobs.cancel(j, o.now);
    case 'expire':
      return Jobs.expire(j, o.now);
    case 'supersede':
      return Jobs.supersede(j, 'interrupted', o.now);
  }
}

describe('mailbox job status machine (book: MailboxJobStatus)', () => {
  it('every reachable job satisfies the invariants; terminal jobs never move; attempts never exceed the maximum', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40 }), fc.integer({ min: 1, max: 6 }), (ops, max) => {
        let j = job({ max_attempts: max });
        for (const o of ops) {
          const r = apply(j, o);
          if (TERMINAL_JOB_STATUSES.has(j.status)) expect(r.ok).toBe(false);
          if (!r.ok) continue;
          j = r.value;
          expect(jobInvariantViolations(j)).toEqual([]);
          expect(j.attempt_count).toBeLessThanOrEqual(j.max_attempts);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('claim-only transitions need the claim token: a stale holder changes nothing', () => {
    const claimed = Jobs.claim(job(), 'A', 'w', 1000, 10);
    if (!claimed.ok) throw new Error('claim');
    expect(Jobs.ack(claimed.value, 'B', 11)).toEqual({ ok: false, error: { code: 'stale_claim', job_id: 'j1' } });
    expect(Jobs.nack(claimed.value, 'B', 'x', false, 11, DEFAULT_MAILBOX_CONFIG).ok).toBe(false);
    expect(Jobs.extendLease(claimed.value, 'B', 1000, 11).ok).toBe(false);
    expect(Jobs.ack(claimed.value, 'A', 11)).toMatchObject({ ok: true, value: { status: 'accepted' } });
  });

  it('a job is claimable only once available', () => {
    expect(Jobs.claim(job({ available_at: 50 }), 'A', 'w', 1000, 49)).toMatchObject({ ok: false, error: { code: 'not_available' } });
    expect(Jobs.claim(job({ available_at: 50 }), 'A', 'w', 1000, 50)).toMatchObject({ ok: true, value: { status: 'claimed', lease_until: 1050 } });
  });

  it('nack retries with backoff 250 ms × 2ⁿ capped at 30 s, then dead-letters after max_attempts', () => {
    let j = job({ max_attempts: 5 });
    const delays: number[] = [];
    for (let i = 0; i < 5; i++) {
      const c = Jobs.claim(j, 'A', 'w', 1000, j.available_at);
      if (!c.ok) throw new Error('claim');
      const n = Jobs.nack(c.value, 'A', `fail ${i}`, false, j.available_at, DEFAULT_MAILBOX_CONFIG);
      if (!n.ok) throw new Error('nack');
      if (n.value.status === 'queued') delays.push(n.value.available_at - j.available_at);
      j = n.value;
    }
    expect(delays).toEqual([250, 500, 1000, 2000]);
    expect(j).toMatchObject({ status: 'dead_letter', attempt_count: 5, last_error: 'fail 4' });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100 }), (n) => {
        expect(retryDelay(n, DEFAULT_MAILBOX_CONFIG)).toBeLessThanOrEqual(30_000);
        expect(retryDelay(n + 1, DEFAULT_MAILBOX_CONFIG)).toBeGreaterThanOrEqual(retryDelay(n, DEFAULT_MAILBOX_CONFIG));
      }),
      { numRuns: 200 },
    );
    expect(retryDelay(8, DEFAULT_MAILBOX_CONFIG)).toBe(30_000);
  });

  it('a permanent failure dead-letters at once; an expired lease re-queues', () => {
    const c = Jobs.claim(job(), 'A', 'w', 1000, 0);
    if (!c.ok) throw new Error('claim');
    expect(Jobs.nack(c.value, 'A', 'agent not found', true, 5, DEFAULT_MAILBOX_CONFIG)).toMatchObject({
      ok: true,
      value: { status: 'dead_letter', attempt_count: 1 },
    });
    expect(Jobs.expire(c.value, 2000)).toMatchObject({
      ok: true,
      value: { status: 'queued', attempt_count: 1, available_at: 2000, last_error: 'lease expired' },
    });
    expect(Jobs.expire(job(), 0).ok).toBe(false);
  });

  it('claims in priority order, then age', () => {
    const jobs = [
      job({ job_id: 'c', priority: 5, created_at: 3 }),
      job({ job_id: 'a', priority: 0, created_at: 9 }),
      job({ job_id: 'b', priority: 5, created_at: 1 }),
    ];
    expect([...jobs].sort(claimOrder).map((j) => j.job_id)).toEqual(['a', 'b', 'c']);
  });

  it('cancel needs a queued job; supersede takes queued or claimed', () => {
    expect(Jobs.cancel(job(), 1)).toMatchObject({ ok: true, value: { status: 'cancelled' } });
    const c = Jobs.claim(job(), 'A', 'w', 1000, 0);
    if (!c.ok) throw new Error('claim');
    expect(Jobs.cancel(c.value, 1).ok).toBe(false);
    expect(Jobs.supersede(c.value, 'newer generation', 1)).toMatchObject({ ok: true, value: { status: 'superseded', last_error: 'newer generation' } });
  });
});

describe('mailboxConfigProblem (settings that cannot work together)', () => {
  it('property: a setting is refused exactly when a renewal comes no sooner than a lease ends or the first retry waits longer than any may', () => {
    const ms = fc.integer({ min: 1, max: 1_000_000 });
    fc.assert(
      fc.property(ms, ms, ms, ms, ms, (lease, suspended, renewal, retry, maxRetry) => {
        const config: MailboxConfig = {
          ...DEFAULT_MAILBOX_CONFIG,
          lease_ms: lease,
          suspended_lease_ms: suspended,
          lease_renewal_interval_ms: renewal,
          default_retry_delay_ms: retry,
          max_retry_delay_ms: maxRetry,
        };
        const sound = renewal < lease && renewal < suspended && retry <= maxRetry;
        expect(mailboxConfigProblem(config) === undefined).toBe(sound);
      }),
    );
  });

  it('names both keys and the values, and the defaults are sound', () => {
    expect(mailboxConfigProblem(DEFAULT_MAILBOX_CONFIG)).toBeUndefined();
    expect(mailboxConfigProblem({ ...DEFAULT_MAILBOX_CONFIG, lease_ms: 5_000 })).toEqual({
      keys: ['lease_renewal_interval_ms', 'lease_ms'],
      message: 'a lease is renewed every 10000 ms but lasts 5000 ms (lease_ms): it would lapse between its renewals',
    });
    expect(mailboxConfigProblem({ ...DEFAULT_MAILBOX_CONFIG, suspended_lease_ms: 10_000 })).toEqual({
      keys: ['lease_renewal_interval_ms', 'suspended_lease_ms'],
      message: 'a lease is renewed every 10000 ms but lasts 10000 ms (suspended_lease_ms): it would lapse between its renewals',
    });
    expect(mailboxConfigProblem({ ...DEFAULT_MAILBOX_CONFIG, max_retry_delay_ms: 100 })).toEqual({
      keys: ['default_retry_delay_ms', 'max_retry_delay_ms'],
      message: 'the first retry waits 250 ms, longer than any retry may (100 ms)',
    });
  });
});
