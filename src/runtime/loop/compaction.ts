import type { RunSignal } from '../run-signal.ts';
import type { AgentEvent } from '../../contract/event.ts';
import type { JsonValue } from '../../contract/json.ts';
import type { Message } from '../../contract/message.ts';
import { StateCommand } from '../../core/state/state-command.ts';
import { autocompact, CompactionStateKey } from '../context.ts';
import type { Env } from '../env.ts';
import { cancelled, type Halt, type Halting } from '../halt.ts';
import type { PhaseRuntime } from '../phase-runtime.ts';
import type { ResolvedAgent } from '../resolve.ts';

/** What a compaction needs of its run. */
export interface CompactionHost {
  readonly env: Env;
  readonly resolved: ResolvedAgent;
  readonly phase: PhaseRuntime;
  /** The run's cancellation; its `AbortSignal` is made only if a summary is asked for. */
  readonly cancellation: RunSignal;
  emit(event: AgentEvent): Promise<void> | undefined;
  submit(command: StateCommand): Halting;
}

/**
 * Auto-compaction (book: 压缩): when the history sent reaches the threshold, the summary of its
 * older part joins the history as an internal system message (`history` is rewritten in place and
 * `rewritten` told); the activity `context_compaction` reports `started`, then `compacted`,
 * `skipped` or `failed`.
 */
export async function compactHistory(
  host: CompactionHost,
  history: Message[],
  context: NonNullable<ResolvedAgent['context']>,
  rewritten: () => void,
): Promise<Halt | undefined> {
  // One id, drawn only when a compaction fires: the activity's and the summary message's.
  let activityId: string | undefined;
  const idOf = (): string => (activityId ??= host.env.ids.next('message'));
  const report = (content: Record<string, JsonValue>): Promise<void> =>
    Promise.resolve(host.emit({ event_type: 'activity_snapshot', message_id: idOf(), activity_type: 'context_compaction', content, replace: true }));
  const outcome = await autocompact(history, context, {
    model: host.resolved.modelName,
    summaryId: idOf,
    onStart: (pre) => report({ status: 'started', pre_tokens: pre }),
    get signal() {
      return host.cancellation.signal;
    },
  });
  if (outcome === undefined) return undefined;
  if (host.cancellation.aborted) return cancelled();
  if (outcome.status !== 'compacted') {
    await report({ ...outcome });
    return undefined;
  }
  history.splice(0, history.length, ...outcome.history);
  rewritten();
  const previous = host.phase.store.snapshot().get(CompactionStateKey);
  const halt = await host.submit(
    StateCommand.empty().update(CompactionStateKey, { total_compactions: (previous?.total_compactions ?? 0) + 1, last: outcome.record }),
  );
  if (halt !== undefined) return halt;
  await report({ status: 'compacted', ...outcome.record });
  return undefined;
}
