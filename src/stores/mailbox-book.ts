import {
  claimOrder,
  Jobs,
  TERMINAL_JOB_STATUSES,
  type JobTransitionError,
  type MailboxConfig,
  type MailboxJob,
  type MailboxJobStatus,
} from '../core/mailbox/job.ts';
import type { MailboxInterrupt, NewMailboxJob } from '../runtime/mailbox-store.ts';
import { checkId, StoreFailure, type Page } from '../runtime/store.ts';

/** All of a mailbox store's data, as the memory and file stores keep it. */
export interface MailboxData {
  jobs: Record<string, MailboxJob>;
  generations: Record<string, number>;
}

/** Null-prototype records: no job or mailbox id can reach `Object.prototype`. */
export const emptyMailboxData = (): MailboxData => ({
  jobs: Object.create(null) as Record<string, MailboxJob>,
  generations: Object.create(null) as Record<string, number>,
});

/** Mailbox data read back from JSON, in null-prototype records. */
export const mailboxDataOf = (raw: { jobs?: Record<string, MailboxJob>; generations?: Record<string, number> } | undefined): MailboxData => {
  const d = emptyMailboxData();
  Object.assign(d.jobs, raw?.jobs ?? {});
  Object.assign(d.generations, raw?.generations ?? {});
  return d;
};

export function refused(e: JobTransitionError): StoreFailure {
  return new StoreFailure({
    code: 'version_conflict',
    message:
      e.code === 'stale_claim'
        ? `stale claim on job ${e.job_id}`
        : e.code === 'wrong_status'
          ? `job ${e.job_id} is ${e.status}, not ${e.expected}`
          : `job ${e.job_id} is not available yet`,
    expected: 0,
    actual: 0,
  });
}

/** A job stamped for the queue. */
export function newJob(job: NewMailboxJob, generation: number, now: number, defaults?: Pick<MailboxConfig, 'default_max_attempts'>): MailboxJob {
  checkId('job', job.job_id);
  checkId('thread', job.mailbox_id);
  const maxAttempts = job.max_attempts ?? defaults?.default_max_attempts ?? 5;
  const priority = job.priority ?? 128;
  if (!Number.isInteger(maxAttempts) || maxAttempts <= 0) throw new StoreFailure({ code: 'validation', message: 'max_attempts must be a positive integer' });
  if (!Number.isInteger(priority) || priority < 0 || priority > 255)
    throw new StoreFailure({ code: 'validation', message: 'priority must be an integer in 0..255' });
  return {
    job_id: job.job_id,
    mailbox_id: job.mailbox_id,
    agent_id: job.agent_id,
    messages: job.messages,
    origin: job.origin,
    ...(job.sender_id !== undefined ? { sender_id: job.sender_id } : {}),
    ...(job.principal !== undefined ? { principal: job.principal } : {}),
    ...(job.parent_run_id !== undefined ? { parent_run_id: job.parent_run_id } : {}),
    priority,
    ...(job.dedupe_key !== undefined ? { dedupe_key: job.dedupe_key } : {}),
    generation,
    status: 'queued',
    available_at: job.available_at ?? now,
    attempt_count: 0,
    max_attempts: maxAttempts,
    created_at: now,
    updated_at: now,
  };
}

/**
 * The mailbox operations over one in-memory data set (synchronous, so each is atomic in one
 * process). The memory store uses it directly; the file store loads, applies and saves it.
 */
export const MailboxBook = {
  enqueue(d: MailboxData, job: NewMailboxJob, now: number, defaults?: Pick<MailboxConfig, 'default_max_attempts'>): MailboxJob {
    if (d.jobs[job.job_id] !== undefined) throw new StoreFailure({ code: 'already_exists', message: `job already exists: ${job.job_id}` });
    if (job.dedupe_key !== undefined) {
      const dup = Object.values(d.jobs).some((j) => j.mailbox_id === job.mailbox_id && j.dedupe_key === job.dedupe_key && !TERMINAL_JOB_STATUSES.has(j.status));
      if (dup) throw new StoreFailure({ code: 'already_exists', message: `dedupe_key=${job.dedupe_key}` });
    }
    const stamped = newJob(job, d.generations[job.mailbox_id] ?? 0, now, defaults);
    d.jobs[job.job_id] = stamped;
    return stamped;
  },
  claim(d: MailboxData, consumer: string, token: string, leaseMs: number, now: number, limit: number): MailboxJob[] {
    const busy = new Set(
      Object.values(d.jobs)
        .filter((j) => j.status === 'claimed')
        .map((j) => j.mailbox_id),
    );
    const out: MailboxJob[] = [];
    for (const j of Object.values(d.jobs)
      .filter((x) => x.status === 'queued' && x.available_at <= now)
      .sort(claimOrder)) {
      if (out.length >= limit) break;
      if (busy.has(j.mailbox_id)) continue;
      if (j.generation < (d.generations[j.mailbox_id] ?? 0)) {
        const s = Jobs.supersede(j, 'queued job superseded by a newer generation', now);
        if (s.ok) d.jobs[j.job_id] = s.value;
        continue;
      }
      const c = Jobs.claim(j, token, consumer, leaseMs, now);
      if (!c.ok) continue;
      d.jobs[j.job_id] = c.value;
      busy.add(j.mailbox_id);
      out.push(c.value);
    }
    return out;
  },
  update(d: MailboxData, jobId: string, step: (j: MailboxJob) => ReturnType<typeof Jobs.ack>): MailboxJob {
    const j = d.jobs[jobId];
    if (j === undefined) throw new StoreFailure({ code: 'not_found', message: `job not found: ${jobId}` });
    const r = step(j);
    if (!r.ok) throw refused(r.error);
    d.jobs[jobId] = r.value;
    return r.value;
  },
  /** Extends a claimed job's lease; false when the job is gone, not claimed, or claimed by another token. */
  extendLease(d: MailboxData, jobId: string, token: string, leaseMs: number, now: number): boolean {
    const j = d.jobs[jobId];
    const r = j === undefined ? undefined : Jobs.extendLease(j, token, leaseMs, now);
    if (r === undefined || !r.ok) return false;
    d.jobs[jobId] = r.value;
    return true;
  },
  cancel(d: MailboxData, jobId: string, now: number): MailboxJob | undefined {
    const j = d.jobs[jobId];
    if (j === undefined) return undefined;
    const r = Jobs.cancel(j, now);
    if (!r.ok) return undefined;
    d.jobs[jobId] = r.value;
    return r.value;
  },
  interrupt(d: MailboxData, mailboxId: string, now: number): MailboxInterrupt {
    const old = d.generations[mailboxId] ?? 0;
    d.generations[mailboxId] = old + 1;
    let superseded = 0;
    let active: MailboxJob | undefined;
    for (const j of Object.values(d.jobs)) {
      if (j.mailbox_id !== mailboxId) continue;
      if (j.status === 'claimed') active = j;
      else if (j.status === 'queued' && j.generation <= old) {
        const s = Jobs.supersede(j, 'queued job superseded by an interrupt', now);
        if (s.ok) {
          d.jobs[j.job_id] = s.value;
          superseded++;
        }
      }
    }
    return { new_generation: old + 1, ...(active !== undefined ? { active_job: active } : {}), superseded_count: superseded };
  },
  reclaimExpired(d: MailboxData, now: number, limit: number): MailboxJob[] {
    const out: MailboxJob[] = [];
    for (const j of Object.values(d.jobs)) {
      if (out.length >= limit) break;
      if (j.status !== 'claimed' || (j.lease_until ?? 0) >= now) continue;
      const r = Jobs.expire(j, now);
      if (r.ok) {
        d.jobs[j.job_id] = r.value;
        out.push(r.value);
      }
    }
    return out;
  },
  purgeTerminal(d: MailboxData, olderThan: number): number {
    let n = 0;
    for (const [id, j] of Object.entries(d.jobs)) {
      if (TERMINAL_JOB_STATUSES.has(j.status) && j.updated_at < olderThan) {
        delete d.jobs[id];
        n++;
      }
    }
    return n;
  },
  list(d: MailboxData, mailboxId: string, q: { readonly status?: MailboxJobStatus; readonly offset: number; readonly limit: number }): Page<MailboxJob> {
    const all = Object.values(d.jobs)
      .filter((j) => j.mailbox_id === mailboxId && (q.status === undefined || j.status === q.status))
      .sort(claimOrder);
    return { items: all.slice(q.offset, q.offset + q.limit), total: all.length };
  },
} as const;
