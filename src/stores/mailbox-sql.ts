import { TERMINAL_JOB_STATUSES, type MailboxJob } from '../core/mailbox/job.ts';
import { emptyMailboxData, type MailboxData } from './mailbox-book.ts';

/** The mailbox tables of the SQL stores (`<p>` is the table prefix). */
export const mailboxSchema = (p: string, bigint: 'INTEGER' | 'BIGINT'): string => `
CREATE TABLE IF NOT EXISTS ${p}_mailbox_jobs (
  job_id TEXT PRIMARY KEY, mailbox_id TEXT NOT NULL, status TEXT NOT NULL, priority INTEGER NOT NULL,
  available_at ${bigint} NOT NULL, created_at ${bigint} NOT NULL, updated_at ${bigint} NOT NULL, lease_until ${bigint},
  dedupe_key TEXT, generation INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS ${p}_mailbox_ready ON ${p}_mailbox_jobs (status, available_at);
CREATE INDEX IF NOT EXISTS ${p}_mailbox_by_thread ON ${p}_mailbox_jobs (mailbox_id, status);
CREATE UNIQUE INDEX IF NOT EXISTS ${p}_mailbox_one_claimed ON ${p}_mailbox_jobs (mailbox_id) WHERE status = 'claimed';
CREATE TABLE IF NOT EXISTS ${p}_mailbox_generations (mailbox_id TEXT PRIMARY KEY, generation INTEGER NOT NULL);
`;

export const JOB_COLUMNS = 'job_id, mailbox_id, status, priority, available_at, created_at, updated_at, lease_until, dedupe_key, generation, data';

/** A job's row values, in `JOB_COLUMNS` order. */
export const jobRow = (j: MailboxJob): (string | number | null)[] => [
  j.job_id,
  j.mailbox_id,
  j.status,
  j.priority,
  j.available_at,
  j.created_at,
  j.updated_at,
  j.lease_until ?? null,
  j.dedupe_key ?? null,
  j.generation,
  JSON.stringify(j),
];

export const TERMINAL_LIST = [...TERMINAL_JOB_STATUSES].map((s) => `'${s}'`).join(', ');

/** Rows (their `data` column) and generations as the book's in-memory data. */
export function dataOf(rows: readonly { data: string }[], generations: readonly { mailbox_id: string; generation: number | string }[]): MailboxData {
  const d = emptyMailboxData();
  for (const r of rows) {
    const j = JSON.parse(r.data) as MailboxJob;
    d.jobs[j.job_id] = j;
  }
  for (const g of generations) d.generations[g.mailbox_id] = Number(g.generation);
  return d;
}

/** The jobs an operation changed (a new object under the same id) or added. */
export function changedJobs(before: MailboxData, after: MailboxData): MailboxJob[] {
  return Object.values(after.jobs).filter((j) => before.jobs[j.job_id] !== j);
}
