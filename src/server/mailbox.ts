import { decisionFor } from '../contract/decision.ts';
import type { Message } from '../contract/message.ts';
import { CLIENT_TOOL_ACTION } from '../contract/tool.ts';
import { DEFAULT_MAILBOX_CONFIG, type MailboxConfig, type MailboxJob, type MailboxJobOrigin } from '../core/mailbox/job.ts';
import type { Env } from '../runtime/env.ts';
import { StoreFailure, type Store } from '../runtime/store.ts';
import { errorFields, silentLogger, type Logger } from './log.ts';
import { asPrincipal, currentPrincipal, mayReach } from './principal.ts';
import type { RunRegistry } from './run-registry.ts';

export interface SubmitRequest {
  readonly threadId: string;
  readonly agentId: string;
  readonly messages: readonly Message[];
  readonly origin?: MailboxJobOrigin;
  readonly priority?: number;
  readonly dedupeKey?: string;
}

/** How long a run waits on a client's tool call by default before the call ends with an error: 24 h. */
export const CLIENT_TOOL_TIMEOUT_MS = 24 * 3600_000;

/** A duration as a person reads it: whole hours, minutes or seconds where it is one, else milliseconds. */
function duration(ms: number): string {
  if (ms % 3600_000 === 0) return `${ms / 3600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}

/**
 * The mailbox service (book: Mailbox 架构): background run requests become durable jobs; a
 * dispatcher claims them (one claimed job per thread, leases renewed while the run goes on), runs
 * them through the run registry, acks a run that ended, nacks one that could not start or failed
 * (backoff 250 ms × 2ⁿ up to 30 s, dead letter after `max_attempts`). A sweeper re-queues jobs whose
 * lease expired (a crashed consumer); GC drops finished jobs after `gc_ttl`. All timing goes through
 * the `Env` (clock and sleep).
 */
export class Mailbox {
  readonly #store: Store;
  readonly #registry: RunRegistry;
  readonly #env: Env;
  readonly #config: MailboxConfig;
  readonly #consumer: string;
  readonly #wakeEveryMs: number;
  readonly #clientToolTimeoutMs: number;
  /** The client calls this mailbox ended, by run, while their runs still wait (so each is ended once). */
  #endedClientCalls = new Map<string, readonly string[]>();
  readonly #running = new Map<string, Promise<void>>();
  #stop: AbortController | undefined;

  readonly #logger: Logger;

  constructor(
    store: Store,
    registry: RunRegistry,
    env: Env,
    options: {
      readonly config?: Partial<MailboxConfig>;
      readonly consumer?: string;
      readonly logger?: Logger;
      /** How often scheduled calls are looked at (`wakeScheduled`), 1 s by default: how late one may wake. */
      readonly wakeEveryMs?: number;
      /**
       * How long a run waits on a client's tool call (`client_tool`) before the call ends with an
       * error the model reads (24 h by default), counted from when the run parked.
       */
      readonly clientToolTimeoutMs?: number;
    } = {},
  ) {
    this.#wakeEveryMs = options.wakeEveryMs ?? 1_000;
    this.#clientToolTimeoutMs = options.clientToolTimeoutMs ?? CLIENT_TOOL_TIMEOUT_MS;
    this.#logger = options.logger ?? silentLogger;
    this.#store = store;
    this.#registry = registry;
    this.#env = env;
    this.#config = { ...DEFAULT_MAILBOX_CONFIG, ...options.config };
    this.#consumer = options.consumer ?? `consumer-${env.ids.next('consumer')}`;
  }

  get config(): MailboxConfig {
    return this.#config;
  }

  /** Jobs this consumer has claimed whose runs are going (`awaken_mailbox_queue_depth`). */
  get claimedJobs(): number {
    return this.#running.size;
  }

  /**
   * Queues a run request. New input on a thread cancels what is going on there first (book: 取消 →
   * 新消息到来时的自动取消): the mailbox generation is bumped (older queued jobs are superseded) and a
   * run in flight is cancelled; a run waiting for a decision is left to its decision.
   *
   * Under access control the thread must be the current principal's (a free one becomes theirs);
   * another's is not there (`StoreFailure not_found`, nothing queued or cancelled). The job records
   * the principal, and its run acts for it.
   */
  async submit(request: SubmitRequest): Promise<MailboxJob> {
    if (!(await mayReach(this.#store, request.threadId, 'write')))
      throw new StoreFailure({ code: 'not_found', message: `thread not found: ${request.threadId}` });
    const principal = currentPrincipal();
    const now = this.#env.clock.now();
    await this.#store.interrupt(request.threadId, now);
    const current = this.#registry.currentRun(request.threadId);
    if (current !== undefined && current.status === 'running') this.#registry.cancel(current.runId);
    return this.#store.enqueue(
      {
        job_id: this.#env.ids.next('job'),
        mailbox_id: request.threadId,
        agent_id: request.agentId,
        messages: request.messages,
        origin: request.origin ?? 'user',
        ...(principal !== undefined ? { principal } : {}),
        ...(request.priority !== undefined ? { priority: request.priority } : {}),
        ...(request.dedupeKey !== undefined ? { dedupe_key: request.dedupeKey } : {}),
      },
      now,
      this.#config,
    );
  }

  /** Claims what is available and starts it; resolves once the claimed jobs are started (not finished). */
  async dispatchOnce(limit = 16): Promise<MailboxJob[]> {
    const now = this.#env.clock.now();
    const token = this.#env.ids.next('claim');
    const claimed = await this.#store.claim(this.#consumer, token, this.#config.lease_ms, now, limit);
    for (const job of claimed) this.#running.set(job.job_id, this.#execute(job, token));
    return claimed;
  }

  /** Waits for every job this consumer is running. */
  async drain(): Promise<void> {
    while (this.#running.size > 0) await Promise.all([...this.#running.values()]);
  }

  async #execute(job: MailboxJob, token: string): Promise<void> {
    try {
      const earlier = await this.#earlierWork(job);
      if (earlier === 'done') {
        await this.#store.ack(job.job_id, token, this.#env.clock.now()).catch(ignoreStale);
        return;
      }
      if (earlier === 'going') {
        await this.#store.nack(job.job_id, token, 'its run goes on elsewhere', false, this.#env.clock.now(), this.#config).catch(ignoreStale);
        return;
      }
      // The run acts for the principal that queued the job: a thread no longer theirs (deleted, then
      // taken by another) is not there for it.
      const start = (): ReturnType<RunRegistry['start']> => this.#registry.start({ threadId: job.mailbox_id, agentId: job.agent_id, messages: job.messages });
      const started = job.principal === undefined ? await start() : await asPrincipal(job.principal, start);
      if (!started.ok) {
        // A busy or paused thread is retried later; anything else cannot succeed.
        const permanent = started.error.code === 'start_failed' || started.error.code === 'thread_not_found';
        await this.#store.nack(job.job_id, token, started.error.message, permanent, this.#env.clock.now(), this.#config).catch(ignoreStale);
        return;
      }
      const renewal = new AbortController();
      const renew = this.#renew(job, token, started.value.runId, renewal.signal);
      const result = await started.value.done;
      renewal.abort();
      await renew;
      const termination = result?.termination;
      if (termination === undefined || termination.type === 'error') {
        await this.#store
          .nack(job.job_id, token, termination?.type === 'error' ? termination.value : 'the run crashed', false, this.#env.clock.now(), this.#config)
          .catch(ignoreStale);
      } else await this.#store.ack(job.job_id, token, this.#env.clock.now()).catch(ignoreStale);
    } finally {
      this.#running.delete(job.job_id);
    }
  }

  /**
   * What became of the work of a job claimed before whose claim lapsed (its consumer died): its run
   * may have been taken up by another instance (a run left running goes on from its last durable
   * write). `going`: its messages are in the thread and a run of the thread is running — retried
   * later; `done`: they are there and answered, no run going — the job is done, not run twice;
   * `none`: run it (a first claim, or a run that ended before it answered).
   */
  async #earlierWork(job: MailboxJob): Promise<'none' | 'going' | 'done'> {
    if (job.attempt_count === 0 || job.messages.length === 0) return 'none';
    const ids = new Set(job.messages.map((m) => m.id));
    const messages = (await this.#store.loadThread(job.mailbox_id))?.messages ?? [];
    const at = messages.map((m) => ids.has(m.id)).lastIndexOf(true);
    if (at < 0 || messages.filter((m) => ids.has(m.id)).length < ids.size) return 'none';
    const runs = await this.#store.listRuns({ offset: 0, limit: 20, threadId: job.mailbox_id, status: 'running' });
    if (runs.items.length > 0) return 'going';
    // Answered: a reply of the model's own after them, not only its tool calls.
    return messages.slice(at + 1).some((m) => m.role === 'assistant' && (m.tool_calls ?? []).length === 0) ? 'done' : 'none';
  }

  /**
   * Extends the lease while the run goes on — by `suspended_lease_ms` while it waits for a decision,
   * else by `lease_ms`; a lost lease cancels the run (another consumer owns the job now).
   */
  async #renew(job: MailboxJob, token: string, runId: string, signal: AbortSignal): Promise<void> {
    for (;;) {
      try {
        await this.#env.sleep(this.#config.lease_renewal_interval_ms, signal);
      } catch {
        return;
      }
      const current = this.#registry.currentRun(job.mailbox_id);
      const waiting = current?.runId === runId && current.status === 'waiting';
      const leaseMs = waiting ? this.#config.suspended_lease_ms : this.#config.lease_ms;
      const kept = await this.#store.extendLease(job.job_id, token, leaseMs, this.#env.clock.now());
      if (!kept) {
        this.#registry.cancel(runId);
        return;
      }
    }
  }

  /**
   * Re-queues jobs whose lease expired (their consumer died). The runs that consumer left unfinished
   * on those threads are marked interrupted (a thread has one claimed job, so they were its).
   */
  async sweep(): Promise<MailboxJob[]> {
    const now = this.#env.clock.now();
    const reclaimed = await this.#store.reclaimExpired(now, 100);
    for (const job of reclaimed) {
      const runs = await this.#store.listRuns({ offset: 0, limit: 20, threadId: job.mailbox_id });
      for (const run of runs.items) {
        // A run parked for a decision stays waiting: the decision revives it wherever it arrives.
        if (run.status === 'done' || run.status === 'waiting' || this.#registry.live(run.run_id) !== undefined) continue;
        // A run whose thread lease is held for it goes on somewhere (taken up by a survivor): its lease decides.
        const lease = await this.#store.getLease(run.thread_id);
        if (lease?.run_id === run.run_id && lease.until > now) continue;
        await this.#store.finishRun(run.run_id, { type: 'error', value: 'interrupted: its consumer stopped renewing the lease' }, now);
      }
    }
    return reclaimed;
  }

  /**
   * Wakes the scheduled calls whose time has come (book: gate outcome `Schedule`): a run waiting in
   * the store on a call scheduled for now or earlier is decided — `resume` — here or wherever it is
   * parked. Ends the client's tool calls a run has waited on longer than the client tool timeout,
   * with an error the model reads. It reads the store, so a wait outlives the process that parked
   * it; returns the calls woken or ended.
   */
  async wakeScheduled(): Promise<string[]> {
    const now = this.#env.clock.now();
    const woken: string[] = [];
    const unanswered = `the client did not send this call's result within ${duration(this.#clientToolTimeoutMs)}`;
    // Client calls ended before, by run: a run that still waits (a batch waiting for its other calls) keeps them listed.
    const ended = new Map<string, readonly string[]>();
    for (let offset = 0; ; offset += 100) {
      const page = await this.#store.listRuns({ offset, limit: 100, status: 'waiting' });
      for (const run of page.items) {
        const parked = await this.#registry.waitingAnywhere(run.run_id);
        const calls = parked?.calls ?? [];
        const due = calls.filter((c) => c.schedule?.not_before !== undefined && c.schedule.not_before <= now);
        const before = this.#endedClientCalls.get(run.run_id) ?? [];
        const expired =
          run.updated_at + this.#clientToolTimeoutMs <= now
            ? calls.filter((c) => c.suspension?.action === CLIENT_TOOL_ACTION && !before.includes(c.callId))
            : [];
        if (before.length > 0) ended.set(run.run_id, before);
        if (parked === undefined || due.length + expired.length === 0) continue;
        const r = await this.#registry.decideAnywhere(parked.runId, [
          ...due.map((c) => decisionFor(c.callId, 'resume', now, { reason: 'its scheduled time came' })),
          ...expired.map((c) => decisionFor(c.callId, 'resume', now, { result: { error: unanswered }, reason: 'the client did not answer' })),
        ]);
        if (r.ok) woken.push(...due.map((c) => c.callId), ...expired.map((c) => c.callId));
        if (r.ok && expired.length > 0) ended.set(run.run_id, [...before, ...expired.map((c) => c.callId)]);
      }
      if (offset + page.items.length >= page.total) {
        this.#endedClientCalls = ended;
        return woken;
      }
    }
  }

  /** Drops finished jobs older than `gc_ttl`. */
  gc(): Promise<number> {
    return this.#store.purgeTerminal(this.#env.clock.now() - this.#config.gc_ttl_ms);
  }

  /** Runs the dispatcher (every `pollMs`), the sweeper and GC until `stop`. */
  start(pollMs = 200): void {
    if (this.#stop !== undefined) return;
    const stop = new AbortController();
    this.#stop = stop;
    const loop = async (task: string, every: number, body: () => Promise<unknown>): Promise<void> => {
      // A failing store is logged once, and again when it recovers; the loop goes on.
      let failing: string | undefined;
      while (!stop.signal.aborted) {
        await body().then(
          () => {
            if (failing !== undefined) this.#logger.info('mailbox store recovered', { task });
            failing = undefined;
          },
          (e: unknown) => {
            const fields = errorFields(e);
            if (failing !== fields['error']) this.#logger.error('mailbox store failure', { task, ...fields });
            failing = String(fields['error']);
          },
        );
        try {
          await this.#env.sleep(every, stop.signal);
        } catch {
          return;
        }
      }
    };
    void loop('dispatch', pollMs, () => this.dispatchOnce());
    void loop('sweep', this.#config.sweep_interval_ms, () => this.sweep());
    void loop('gc', this.#config.gc_interval_ms, () => this.gc());
    void loop('wake', this.#wakeEveryMs, () => this.wakeScheduled());
  }

  async stop(): Promise<void> {
    this.#stop?.abort();
    this.#stop = undefined;
    await this.drain();
  }
}

/** A job whose claim moved on (swept and claimed elsewhere) is no longer this consumer's to settle. */
function ignoreStale(e: unknown): void {
  if (e instanceof StoreFailure && (e.error.code === 'version_conflict' || e.error.code === 'not_found')) return;
  throw e;
}
