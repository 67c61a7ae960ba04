import type { Message } from '../../contract/message.ts';
import { err, ok, type Result } from '../../contract/result.ts';

/** Book: Mailbox 架构 → MailboxJobStatus. */
export type MailboxJobStatus = 'queued' | 'claimed' | 'accepted' | 'cancelled' | 'superseded' | 'dead_letter';
export type MailboxJobOrigin = 'user' | 'a2a' | 'internal';

export const TERMINAL_JOB_STATUSES: ReadonlySet<MailboxJobStatus> = new Set(['accepted', 'cancelled', 'superseded', 'dead_letter']);

/** A queued run request (book: MailboxJob). Times in ms since the epoch. */
export interface MailboxJob {
  readonly job_id: string;
  /** The thread the job runs on. */
  readonly mailbox_id: string;
  readonly agent_id: string;
  readonly messages: readonly Message[];
  readonly origin: MailboxJobOrigin;
  readonly sender_id?: string;
  /**
   * The principal that queued the job (docs/server.md → Access control): its run acts for it, and
   * starts only on a thread that principal may write — not on a thread that merely bears the name.
   */
  readonly principal?: string;
  readonly parent_run_id?: string;
  /** 0 is the highest priority; default 128. */
  readonly priority: number;
  readonly dedupe_key?: string;
  /** The mailbox generation the job was queued in; an interrupt bumps it and supersedes older jobs. */
  readonly generation: number;
  readonly status: MailboxJobStatus;
  readonly available_at: number;
  readonly attempt_count: number;
  readonly max_attempts: number;
  readonly last_error?: string;
  readonly claim_token?: string;
  readonly claimed_by?: string;
  readonly lease_until?: number;
  readonly created_at: number;
  readonly updated_at: number;
}

/** Book: MailboxConfig defaults. */
export interface MailboxConfig {
  readonly lease_ms: number;
  /** The lease a claimed job's renewal takes while its run waits for a decision (a person may take minutes). */
  readonly suspended_lease_ms: number;
  readonly lease_renewal_interval_ms: number;
  readonly sweep_interval_ms: number;
  readonly gc_interval_ms: number;
  readonly gc_ttl_ms: number;
  readonly default_max_attempts: number;
  readonly default_retry_delay_ms: number;
  readonly max_retry_delay_ms: number;
}

export const DEFAULT_MAILBOX_CONFIG: MailboxConfig = Object.freeze({
  lease_ms: 30_000,
  suspended_lease_ms: 600_000,
  lease_renewal_interval_ms: 10_000,
  sweep_interval_ms: 30_000,
  gc_interval_ms: 60_000,
  gc_ttl_ms: 24 * 3600_000,
  default_max_attempts: 5,
  default_retry_delay_ms: 250,
  max_retry_delay_ms: 30_000,
});

/**
 * Why a mailbox's settings cannot work together, naming the two keys that clash (the one to change
 * first): a lease renewed no sooner than it ends lapses while its run is alive, and a first retry
 * longer than the cap says nothing the cap does not. `undefined` when they can.
 */
export function mailboxConfigProblem(
  c: MailboxConfig,
): { readonly keys: readonly [keyof MailboxConfig, keyof MailboxConfig]; readonly message: string } | undefined {
  for (const lease of ['lease_ms', 'suspended_lease_ms'] as const) {
    if (c.lease_renewal_interval_ms >= c[lease]) {
      return {
        keys: ['lease_renewal_interval_ms', lease],
        message: `a lease is renewed every ${c.lease_renewal_interval_ms} ms but lasts ${c[lease]} ms (${lease}): it would lapse between its renewals`,
      };
    }
  }
  if (c.default_retry_delay_ms > c.max_retry_delay_ms) {
    return {
      keys: ['default_retry_delay_ms', 'max_retry_delay_ms'],
      message: `the first retry waits ${c.default_retry_delay_ms} ms, longer than any retry may (${c.max_retry_delay_ms} ms)`,
    };
  }
  return undefined;
}

/** The wait before retry number `attempt` (1-based): `base · 2^(attempt−1)`, capped. */
export const retryDelay = (attempt: number, config: Pick<MailboxConfig, 'default_retry_delay_ms' | 'max_retry_delay_ms'>): number =>
  Math.min(config.max_retry_delay_ms, config.default_retry_delay_ms * 2 ** Math.min(Math.max(attempt - 1, 0), 30));

/** Why a transition was refused. */
export type JobTransitionError =
  | { readonly code: 'wrong_status'; readonly job_id: string; readonly status: MailboxJobStatus; readonly expected: MailboxJobStatus }
  | { readonly code: 'stale_claim'; readonly job_id: string }
  | { readonly code: 'not_available'; readonly job_id: string; readonly available_at: number };

type Outcome = Result<MailboxJob, JobTransitionError>;

const need = (job: MailboxJob, status: MailboxJobStatus): JobTransitionError | undefined =>
  job.status === status ? undefined : { code: 'wrong_status', job_id: job.job_id, status: job.status, expected: status };

function owned(job: MailboxJob, token: string): JobTransitionError | undefined {
  const wrong = need(job, 'claimed');
  if (wrong !== undefined) return wrong;
  return job.claim_token === token ? undefined : { code: 'stale_claim', job_id: job.job_id };
}

/** The job without claim fields, at a new status. */
function settle(job: MailboxJob, status: MailboxJobStatus, now: number, extra: Partial<MailboxJob> = {}): MailboxJob {
  const { claim_token: _t, claimed_by: _b, lease_until: _l, ...rest } = job;
  return { ...rest, ...extra, status, updated_at: now };
}

/**
 * The pure transitions of the book's status machine:
 * `queued --claim--> claimed --ack--> accepted`; `claimed --nack--> queued` (retry, with backoff) or
 * `dead_letter` (permanent, or attempts exhausted); `queued --cancel--> cancelled`;
 * `queued|claimed --interrupt--> superseded`. Claimed-only transitions check the claim token.
 */
export const Jobs = {
  claim(job: MailboxJob, token: string, consumer: string, leaseMs: number, now: number): Outcome {
    const wrong = need(job, 'queued');
    if (wrong !== undefined) return err(wrong);
    if (job.available_at > now) return err({ code: 'not_available', job_id: job.job_id, available_at: job.available_at });
    return ok({ ...job, status: 'claimed', claim_token: token, claimed_by: consumer, lease_until: now + leaseMs, updated_at: now });
  },
  ack(job: MailboxJob, token: string, now: number): Outcome {
    const wrong = owned(job, token);
    return wrong !== undefined ? err(wrong) : ok(settle(job, 'accepted', now));
  },
  /** A failed attempt: retry after the backoff, or dead-letter when permanent or out of attempts. */
  nack(
    job: MailboxJob,
    token: string,
    error: string,
    permanent: boolean,
    now: number,
    config: Pick<MailboxConfig, 'default_retry_delay_ms' | 'max_retry_delay_ms'>,
  ): Outcome {
    const wrong = owned(job, token);
    if (wrong !== undefined) return err(wrong);
    const attempts = job.attempt_count + 1;
    if (permanent || attempts >= job.max_attempts) return ok(settle(job, 'dead_letter', now, { attempt_count: attempts, last_error: error }));
    return ok(settle(job, 'queued', now, { attempt_count: attempts, last_error: error, available_at: now + retryDelay(attempts, config) }));
  },
  cancel(job: MailboxJob, now: number): Outcome {
    const wrong = need(job, 'queued');
    return wrong !== undefined ? err(wrong) : ok(settle(job, 'cancelled', now));
  },
  supersede(job: MailboxJob, reason: string, now: number): Outcome {
    if (job.status !== 'queued' && job.status !== 'claimed') return err({ code: 'wrong_status', job_id: job.job_id, status: job.status, expected: 'queued' });
    return ok(settle(job, 'superseded', now, { last_error: reason }));
  },
  extendLease(job: MailboxJob, token: string, leaseMs: number, now: number): Outcome {
    const wrong = owned(job, token);
    return wrong !== undefined ? err(wrong) : ok({ ...job, lease_until: now + leaseMs, updated_at: now });
  },
  /** A claimed job whose lease ran out goes back to the queue (or to the dead letters when out of attempts). */
  expire(job: MailboxJob, now: number): Outcome {
    const wrong = need(job, 'claimed');
    if (wrong !== undefined) return err(wrong);
    const attempts = job.attempt_count + 1;
    if (attempts >= job.max_attempts)
      return ok(settle(job, 'dead_letter', now, { attempt_count: attempts, last_error: 'lease expired; max attempts reached' }));
    return ok(settle(job, 'queued', now, { attempt_count: attempts, last_error: 'lease expired', available_at: now }));
  },
} as const;

/** What a job must satisfy to be stored (by status). */
export function jobInvariantViolations(job: MailboxJob): string[] {
  const out: string[] = [];
  const claimFields = [job.claim_token, job.claimed_by, job.lease_until].filter((x) => x !== undefined).length;
  if (job.status === 'claimed' && claimFields !== 3) out.push('a claimed job carries its claim token, consumer and lease');
  if (job.status !== 'claimed' && claimFields !== 0) out.push(`a ${job.status} job carries no claim fields`);
  if (job.max_attempts <= 0) out.push('max_attempts > 0');
  if (job.attempt_count > job.max_attempts) out.push('attempt_count ≤ max_attempts');
  if (job.priority < 0 || job.priority > 255) out.push('priority in 0..255');
  return out;
}

/** Claim order: priority (0 first), then age, then id. */
export const claimOrder = (a: MailboxJob, b: MailboxJob): number =>
  a.priority - b.priority || a.created_at - b.created_at || (a.job_id < b.job_id ? -1 : a.job_id > b.job_id ? 1 : 0);
