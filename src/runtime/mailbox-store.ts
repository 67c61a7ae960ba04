import type { MailboxConfig, MailboxJob, MailboxJobStatus } from '../core/mailbox/job.ts';
import type { Page } from './store.ts';

/** A job to enqueue: its identity and content; the store stamps status, generation, attempts and times. */
export type NewMailboxJob = Pick<MailboxJob, 'job_id' | 'mailbox_id' | 'agent_id' | 'messages' | 'origin'> &
  Partial<Pick<MailboxJob, 'sender_id' | 'principal' | 'parent_run_id' | 'priority' | 'dedupe_key' | 'available_at' | 'max_attempts'>>;

/** Book: MailboxInterrupt. */
export interface MailboxInterrupt {
  readonly new_generation: number;
  /** The claimed job of the mailbox, if any: not superseded here — its run is the caller's to cancel. */
  readonly active_job?: MailboxJob;
  readonly superseded_count: number;
}

/**
 * The mailbox port (book: MailboxStore): durable enqueue, atomic claim (one claimed job per mailbox,
 * one consumer per job), token-checked ack/nack/extend, cancel, and interrupt with a generation
 * bump. A stale token or a wrong status throws `StoreFailure {version_conflict}`.
 */
export interface MailboxStore {
  enqueue(job: NewMailboxJob, now: number, defaults?: Pick<MailboxConfig, 'default_max_attempts'>): Promise<MailboxJob>;
  /** Claims up to `limit` available jobs, each of a mailbox with no claimed job, in claim order. */
  claim(consumer: string, token: string, leaseMs: number, now: number, limit: number): Promise<MailboxJob[]>;
  ack(jobId: string, token: string, now: number): Promise<MailboxJob>;
  nack(
    jobId: string,
    token: string,
    error: string,
    permanent: boolean,
    now: number,
    config: Pick<MailboxConfig, 'default_retry_delay_ms' | 'max_retry_delay_ms'>,
  ): Promise<MailboxJob>;
  /** Cancels a queued job; undefined when it is not queued (a claimed job's run is cancelled instead). */
  cancelJob(jobId: string, now: number): Promise<MailboxJob | undefined>;
  extendLease(jobId: string, token: string, leaseMs: number, now: number): Promise<boolean>;
  interrupt(mailboxId: string, now: number): Promise<MailboxInterrupt>;
  /** Claimed jobs whose lease ended before `now` go back to the queue (or to the dead letters). */
  reclaimExpired(now: number, limit: number): Promise<MailboxJob[]>;
  /** Deletes terminal jobs last updated before `olderThan`; returns how many. */
  purgeTerminal(olderThan: number): Promise<number>;
  loadJob(jobId: string): Promise<MailboxJob | undefined>;
  listJobs(mailboxId: string, query: { readonly status?: MailboxJobStatus; readonly offset: number; readonly limit: number }): Promise<Page<MailboxJob>>;
}
