import { z } from 'zod';
import { PhaseSchema } from '../../contract/phase.ts';
import type { JsonValue } from '../../contract/json.ts';
import { defineStateKey } from '../state/state-key.ts';
import type { ScheduledAction } from '../state/state-command.ts';

/** A queued scheduled action with the id the phase runtime gave it at submit. */
export interface ActionEnvelope {
  readonly id: number;
  readonly action: ScheduledAction;
}

export interface FailedAction {
  readonly id: number;
  readonly action: ScheduledAction;
  readonly error: string;
}

const ActionSchema = z.object({ phase: PhaseSchema, key: z.string(), payload: z.unknown() });
const EnvelopeSchema = z.object({ id: z.number().int().positive(), action: ActionSchema });

export type PendingUpdate = { readonly op: 'push'; readonly envelope: ActionEnvelope } | { readonly op: 'remove'; readonly id: number };

/** `__runtime.pending_scheduled_actions`: exclusive, run-scoped, persistent (core-spec §1.9). */
export const PendingScheduledActions = defineStateKey<readonly ActionEnvelope[], PendingUpdate>({
  key: '__runtime.pending_scheduled_actions',
  merge: 'exclusive',
  init: () => [],
  apply: (queue, update) => (update.op === 'push' ? [...queue, update.envelope] : queue.filter((e) => e.id !== update.id)),
  codec: z.array(EnvelopeSchema) as z.ZodType<readonly ActionEnvelope[]>,
  encode: (queue) => queue as unknown as JsonValue,
});

/** `__runtime.failed_scheduled_actions`: actions whose handler failed, with the error text. */
export const FailedScheduledActions = defineStateKey<readonly FailedAction[], FailedAction>({
  key: '__runtime.failed_scheduled_actions',
  merge: 'exclusive',
  init: () => [],
  apply: (failed, entry) => [...failed, entry],
  codec: z.array(EnvelopeSchema.extend({ error: z.string() })) as z.ZodType<readonly FailedAction[]>,
  encode: (failed) => failed as unknown as JsonValue,
});

export const RUNTIME_QUEUE_PLUGIN = '__runtime.queue';
