import type { AgentEvent } from '../../contract/event.ts';
import { toRunStatus, type TerminationReason } from '../../contract/lifecycle.ts';
import type { Message } from '../../contract/message.ts';
import type { Phase } from '../../contract/phase.ts';
import type { PhaseFields } from '../../core/phase/plugin.ts';
import { StateCommand } from '../../core/state/state-command.ts';
import type { Env } from '../env.ts';
import { thrown, type Halt, type Halting } from '../halt.ts';
import { RunLifecycle } from '../loop-keys.ts';
import { andThen, andThenOrElse, type MaybePromise } from '../maybe-promise.ts';
import type { PhaseRuntime } from '../phase-runtime.ts';

/** What the end of a run needs of its loop. */
export interface FinishHost {
  readonly env: Env;
  readonly phase: PhaseRuntime;
  readonly threadId: string;
  readonly runId: string;
  messages(): readonly Message[];
  /** The run's answer: its last assistant message after the input. */
  response(): string;
  emit(event: AgentEvent): Promise<void> | undefined;
  submit(command: StateCommand): Halting;
  runPhase<P extends Phase>(phase: P, fields: PhaseFields<P>, cancellable?: boolean): Halting;
  checkpoint(termination: TerminationReason | undefined): Halting;
  emitSnapshot(): Promise<void> | undefined;
}

/**
 * The end of a run (book: RunEnd): the lifecycle marked done when the termination ends it, the
 * RunEnd phase, the final checkpoint (attempted: the run's result does not depend on it),
 * `state_snapshot` and `run_finish`. A halt on the way replaces the termination unless the run
 * failed already (it keeps its first error). Gives the termination the run ended with: now when
 * every commit, hook, store and sink on the way answered at once, else a promise (an `await` on a
 * value that is here would cost a turn of the queue and a promise, five times a run). A throw of
 * the sink (`state_snapshot`, `run_finish`) is the caller's, now or as the promise's rejection.
 */
export function finishRun(host: FinishHost, termination: TerminationReason): MaybePromise<TerminationReason> {
  let ended: MaybePromise<TerminationReason>;
  try {
    ended = andThenOrElse(endPhases(host, termination), endedWith, endedThrowing, termination);
  } catch (e) {
    ended = endedThrowing(e, termination);
  }
  return andThen(ended, Ending.begin, host);
}

/** The lifecycle marked done (when the termination ends the run and it is not yet), then RunEnd. */
function endPhases(host: FinishHost, termination: TerminationReason): Halting {
  const lifecycle = host.phase.store.snapshot().get(RunLifecycle);
  const target = toRunStatus(termination);
  if (target.status === 'done' && lifecycle !== undefined && lifecycle.status !== 'done') {
    const done = StateCommand.empty().update(RunLifecycle, { op: 'done', reason: target.doneReason ?? 'unknown', at: host.env.clock.now() });
    return andThen(host.submit(done), runEndUnlessHalted, host);
  }
  return runEnd(host);
}

function runEndUnlessHalted(halt: Halt | undefined, host: FinishHost): Halting {
  return halt !== undefined ? halt : runEnd(host);
}

function runEnd(host: FinishHost): Halting {
  return host.runPhase('run_end', { messages: host.messages() }, false);
}

/** A halt on the way replaces the termination, unless the run failed already. */
function endedWith(halt: Halt | undefined, termination: TerminationReason): TerminationReason {
  return halt !== undefined && termination.type !== 'error' ? halt : termination;
}

function endedThrowing(e: unknown, termination: TerminationReason): TerminationReason {
  return termination.type !== 'error' ? thrown(e) : termination;
}

/** What is left once the termination is settled: the final checkpoint, `state_snapshot` and `run_finish`. */
class Ending {
  readonly host: FinishHost;
  readonly final: TerminationReason;
  /** The run's answer as RunEnd left it. */
  readonly response: string;

  constructor(host: FinishHost, final: TerminationReason, response: string) {
    this.host = host;
    this.final = final;
    this.response = response;
  }

  static begin(this: void, final: TerminationReason, host: FinishHost): MaybePromise<TerminationReason> {
    const ending = new Ending(host, final, host.response());
    let written: Halting;
    try {
      written = host.checkpoint(final);
    } catch {
      // The final checkpoint is attempted; the run's result does not depend on it.
      written = undefined;
    }
    return andThenOrElse(written, Ending.snapshot, Ending.snapshot, ending);
  }

  static snapshot(this: void, _: unknown, ending: Ending): MaybePromise<TerminationReason> {
    return andThen(ending.host.emitSnapshot(), Ending.finish, ending);
  }

  static finish(this: void, _: unknown, ending: Ending): MaybePromise<TerminationReason> {
    const { host, final, response } = ending;
    const lifecycle = host.phase.store.snapshot().get(RunLifecycle);
    const finished = host.emit({
      event_type: 'run_finish',
      thread_id: host.threadId,
      run_id: host.runId,
      result: { response, status: lifecycle?.status ?? 'done', ...(lifecycle?.status_reason !== undefined ? { status_reason: lifecycle.status_reason } : {}) },
      termination: final,
    });
    return andThen(finished, Ending.final, ending);
  }

  static final(this: void, _: unknown, ending: Ending): TerminationReason {
    return ending.final;
  }
}
