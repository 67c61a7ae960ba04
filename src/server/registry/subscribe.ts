import type { TerminationReason } from '../../contract/lifecycle.ts';
import type { Message } from '../../contract/message.ts';
import { StoreFailure, type Store } from '../../runtime/store.ts';
import type { ClusterRelay } from '../cluster-relay.ts';
import { asPrincipal, currentPrincipal, mayReach } from '../principal.ts';
import type { LogItem } from '../thread-log.ts';
import type { LiveRuns } from './live-runs.ts';
import type { ThreadLogs } from './thread-logs.ts';

/** What following a thread needs of the registry it serves. */
export interface SubscriptionsHost {
  readonly store: Store;
  readonly relay: ClusterRelay | undefined;
  readonly logs: ThreadLogs;
  readonly runs: LiveRuns;
}

/**
 * Following a thread's events: from the local ring (a run here) or the shared log (with several
 * instances), with a resync of the thread's messages for a follower the ring has left behind.
 */
export class Subscriptions {
  readonly #host: SubscriptionsHost;

  constructor(host: SubscriptionsHost) {
    this.#host = host;
  }

  /**
   * Where a thread's stream stands now: the last frame delivered to its followers (the shared log's
   * last with several instances); a resync made now covers up to it.
   */
  async lastSeq(threadId: string): Promise<number> {
    const { relay, logs } = this.#host;
    if (relay !== undefined) return relay.bus.lastSeq(threadId);
    const log = logs.log(threadId);
    await logs.loadMark(threadId, log);
    return log.publishedSeq;
  }

  /**
   * Subscribes to a thread's log; frames lost to the ring are replaced by a resync with the thread's
   * messages: the stored history (committed at every step end), plus the input of the run in flight
   * when its first step has not been committed yet.
   */
  async subscribe(
    threadId: string,
    since: number | undefined,
    onItem: (item: LogItem) => void,
    options: { readonly scope?: 'thread' | 'run' } = {},
  ): Promise<() => void> {
    const { store, relay, logs, runs } = this.#host;
    if (!(await mayReach(store, threadId, 'read')) && runs.visible(runs.current(threadId)) === undefined) {
      throw new StoreFailure({ code: 'not_found', message: `thread not found: ${threadId}` });
    }
    // With several instances, a thread's stream follows the shared log (its runs may happen anywhere);
    // a stream of one local run (it ends with that run) reads the local ring.
    const local = options.scope === 'run' && runs.current(threadId) !== undefined;
    if (relay !== undefined && !local) {
      // The shared log outlives this request: its follower reads on only while the thread is still
      // its principal's (an id deleted and taken by another principal names their thread then).
      const principal = currentPrincipal();
      const mayRead = principal === undefined ? undefined : () => asPrincipal(principal, () => mayReach(store, threadId, 'read'));
      return relay.follow(threadId, since, onItem, mayRead);
    }
    // The messages of a resync are read only for a subscriber already behind the ring; one that is not
    // subscribes without waiting, so it cannot fall behind before it is attached.
    const log = logs.log(threadId);
    await logs.loadMark(threadId, log);
    const messages = log.isBehind(since) ? await this.#resyncMessages(threadId) : [];
    const off = log.subscribe(since, onItem, (seq) => ({ kind: 'resync', seq, messages }));
    return () => {
      off();
      // The last follower of an idle thread gone: its ring may now make room for others.
      logs.evictIdle();
    };
  }

  /** The thread as a resync shows it: the stored history plus the input of a run not yet committed. */
  async #resyncMessages(threadId: string): Promise<readonly Message[]> {
    const stored = (await this.#host.store.loadThread(threadId))?.messages ?? [];
    const current = this.#host.runs.current(threadId);
    const ids = new Set(stored.map((m) => m.id));
    const pending = current === undefined ? [] : current.input.filter((m) => m.id === undefined || !ids.has(m.id));
    return [...stored, ...pending];
  }

  /**
   * Resolves when the run's current segment ends (its next `run_finish` frame, suspended or final),
   * with that frame's termination; at once when the run already waits or is done.
   */
  async segmentEnd(runId: string, fromSeq: number): Promise<TerminationReason | undefined> {
    const run = this.#host.runs.get(runId);
    if (run === undefined) return undefined;
    return new Promise((resolveEnd) => {
      let off: (() => void) | undefined;
      let done = false;
      void this.subscribe(
        run.threadId,
        fromSeq,
        (item) => {
          if (done || item.kind !== 'frame' || item.runId !== runId || item.event.event_type !== 'run_finish') return;
          done = true;
          off?.();
          resolveEnd(item.event.termination);
        },
        { scope: 'run' },
      ).then((unsubscribe) => {
        off = unsubscribe;
        if (done) unsubscribe();
      });
    });
  }
}
