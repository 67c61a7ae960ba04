import type { AgentSpec, RunRecovery } from '../contract/agent-spec.ts';
import { agentOfDigest } from './agent-digest.ts';
import type { RunRecord, Store } from '../runtime/store.ts';
import { errorFields, type Logger } from './log.ts';

/** What a server does with a run a previous process left running when neither it nor the run's agent says: take it up. */
export const DEFAULT_RECOVERY: RunRecovery = 'resume';

/** What the start-up does with the runs a previous process left running. */
export interface RecoveryOptions {
  /** The server's choice, for the runs of agents that make none of their own (default `interrupt`). */
  readonly recovery?: RunRecovery;
  /**
   * The agents served now. An agent's own `recovery` wins over the server's; a run whose agent is
   * not among them is not taken up. Without them, the server's choice holds for every run.
   */
  readonly agents?: ReadonlyMap<string, Pick<AgentSpec, 'recovery'>>;
  /** Before `recovery`: `true` is `recovery: 'resume'` (still read, for callers written then). */
  readonly resume?: boolean;
  /**
   * What each agent is now (`agentDigest`): a run that recorded another digest when it started
   * (`RunRecord.agent_digest`) is not taken up — its agent's config or code changed since — but
   * ended with that reason. Without it, or for a run stored without a digest, nothing is compared.
   */
  readonly digest?: (agentId: string) => string | undefined;
  /** Told how many runs were marked, when there were any. */
  readonly logger?: Logger;
}

const stoppedWhile = (status: RunRecord['status']): string => `interrupted: the server stopped while the run was ${status}`;

/** What becomes of a run left running: taken up, or ended with the reason. */
export type RecoveryFate = { readonly resume: true } | { readonly resume: false; readonly reason: string };

/**
 * Whether a run left running is taken up, or why it ends (`stopped`, and what else there is to say):
 * its agent's `recovery`, else the server's, says `interrupt`; its agent is no longer served; or its
 * agent is no longer what the run started with. (A delegate's sub-run is set aside before: its parent decides what becomes of it.)
 */
export function recoveryFate(run: RunRecord, options: RecoveryOptions, stopped = stoppedWhile('running')): RecoveryFate {
  const server = options.recovery ?? (options.resume === true ? 'resume' : 'interrupt');
  const agents = options.agents;
  if (agents === undefined) return server === 'resume' ? { resume: true } : { resume: false, reason: stopped };
  // A record that names no agent runs as the runtime's first, as a start without an agent does.
  const agentId = run.agent_id !== '' ? run.agent_id : [...agents.keys()].sort()[0];
  const agent = agentId !== undefined ? agents.get(agentId) : undefined;
  const recovery = agent?.recovery ?? server;
  if (recovery === 'interrupt') return { resume: false, reason: stopped };
  if (agent === undefined || agentId === undefined) return { resume: false, reason: `${stopped}, and its agent '${agentId ?? ''}' is no longer served` };
  // The digest is of the agent the run started as (a handoff may have made another its agent since).
  const started = run.agent_digest === undefined ? undefined : (agentOfDigest(run.agent_digest) ?? agentId);
  const now = started === undefined ? undefined : options.digest?.(started);
  if (started !== undefined && now !== run.agent_digest && (now !== undefined || options.digest !== undefined)) {
    const why =
      now === undefined ? `its agent '${started}' is no longer served` : `its agent '${started}' changed since the run started (its config or its code)`;
    return { resume: false, reason: `${stopped}, and ${why}` };
  }
  return { resume: true };
}

/** Every run of the store with `status`, newest first (read whole before any of them changes). */
async function runsWith(store: Store, status: RunRecord['status']): Promise<RunRecord[]> {
  const runs: RunRecord[] = [];
  for (let offset = 0; ; offset += 200) {
    const page = await store.listRuns({ offset, limit: 200, status });
    runs.push(...page.items);
    if (page.items.length < 200) return runs;
  }
}

/**
 * At start-up, a run the store still shows as created or running was cut off by the end of the
 * process that owned it (a crash, a kill -9). A created run is marked done with the error
 * `interrupted: …`, never left looking alive. A running run is left running — to be recovered from
 * its last durable point (`runsLeftRunning`, `RunRegistry.recover`) — when its agent's `recovery`,
 * else the server's, is `resume` and its agent is still served; otherwise it is marked too, with
 * the reason. A delegate's sub-run is always marked: it is its parent's call, and the parent decides
 * what becomes of it (its call is replayed or ends indeterminate). Messages up to the last
 * checkpoint are kept. A run waiting for a decision is left waiting: its stored state is all a
 * decision needs (`RunRegistry.adopt`).
 * Its thread leases are dropped: no other process holds one. Returns the ids marked. (With one
 * server per store; several instances on one store end each other's runs through the thread leases.)
 */
export async function recoverRuns(store: Store, now: number, options: RecoveryOptions = {}): Promise<string[]> {
  const marked: string[] = [];
  const end = async (run: RunRecord, reason: string): Promise<void> => {
    await store.finishRun(run.run_id, { type: 'error', value: reason }, now);
    marked.push(run.run_id);
  };
  for (const run of await runsWith(store, 'created')) await end(run, stoppedWhile('created'));
  for (const run of await runsWith(store, 'running')) {
    if (run.parent_run_id !== undefined) {
      await end(run, stoppedWhile('running'));
      continue;
    }
    const fate = recoveryFate(run, options);
    if (!fate.resume) await end(run, fate.reason);
  }
  await store.clearLeases();
  if (marked.length > 0) options.logger?.warn(`marked ${marked.length} run(s) left unfinished by a previous process as interrupted`, { runs: marked.length });
  return marked;
}

/**
 * The runs the store holds as running, oldest first: after `recoverRuns` at start-up, those a
 * process that died left to be taken up from their last durable point (`RunRegistry.recover`).
 */
export async function runsLeftRunning(store: Store): Promise<string[]> {
  return (await runsWith(store, 'running')).map((run) => run.run_id).reverse();
}

/**
 * Takes up each run a previous process left running (`runsLeftRunning`), and logs how many: one
 * that cannot be taken up (its store answers badly) is logged and does not keep the server from
 * starting. With `jobs`, a mailbox job the dead process had claimed on the thread of a run taken up
 * is acknowledged: the run is that job's work going on (a thread has one claimed job at a time), and
 * the job re-queued when its dead claim expired would run its messages a second time.
 */
export async function resumeLeftRunning(
  registry: { recover(runId: string): Promise<boolean> },
  runIds: readonly string[],
  logger: Logger,
  jobs?: { readonly store: Pick<Store, 'getRun' | 'listJobs' | 'ack'>; readonly now: number },
): Promise<void> {
  if (runIds.length === 0) return;
  let resumed = 0;
  for (const runId of runIds) {
    const taken = await registry.recover(runId).catch((e: unknown) => void logger.error('run left running not recovered', { run: runId, ...errorFields(e) }));
    if (taken !== true) continue;
    resumed++;
    if (jobs === undefined) continue;
    await acknowledgeJobOf(runId, jobs.store, jobs.now).catch((e: unknown) =>
      logger.error('mailbox job of a resumed run not acknowledged', { run: runId, ...errorFields(e) }),
    );
  }
  logger.warn(`resumed ${resumed} of ${runIds.length} run(s) a previous process left running`, { runs: runIds.length, resumed });
}

/** Acknowledges the mailbox job claimed on the thread of a run taken up (`resumeLeftRunning`). */
export async function acknowledgeJobOf(runId: string, store: Pick<Store, 'getRun' | 'listJobs' | 'ack'>, now: number): Promise<void> {
  const run = await store.getRun(runId);
  if (run === undefined) return;
  const claimed = await store.listJobs(run.thread_id, { status: 'claimed', offset: 0, limit: 10 });
  for (const job of claimed.items) await store.ack(job.job_id, job.claim_token ?? '', now);
}
