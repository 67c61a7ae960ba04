import { deriveRunStatus } from '../../contract/lifecycle.ts';
import type { Message } from '../../contract/message.ts';
import type { LoopInput } from '../../core/loop/step.ts';
import { StateCommand } from '../../core/state/state-command.ts';
import { isHalt, type Halt, type Halting } from '../halt.ts';
import { andThen, type MaybePromise } from '../maybe-promise.ts';
import { ToolBatch, ToolBatchKey, type BatchHost } from '../tool-batch.ts';
import type { Inference } from './inference.ts';

/**
 * A run's tool batch across its steps: the batch a step opens (or a run taken up goes on with), its
 * run, and its publication into the history. The durable batch record is cleared with the step's
 * StepCompleted commit when the batch was published inside its step (`completeStep`), at once when
 * it was published after a resume (the step had ended already).
 */
export class StepBatch {
  readonly #host: BatchHost;
  readonly #messages: Message[];
  #batch: ToolBatch | undefined;
  /** The batch a recovered run goes on with, until its step's `run` takes it. */
  #recovered: ToolBatch | undefined;
  #clearRecord = false;

  constructor(host: BatchHost, messages: Message[]) {
    this.#host = host;
    this.#messages = messages;
  }

  /** The batch of the step (or of the run parked on it), until it is published. */
  get current(): ToolBatch | undefined {
    return this.#batch;
  }

  /** A run revived from a waiting state holds the batch it parked on. */
  revived(batch: ToolBatch): void {
    this.#batch = batch;
  }

  /** A run recovered inside a batch goes on with it at its step's `batch`. */
  recovered(batch: ToolBatch): void {
    this.#recovered = batch;
  }

  /**
   * Runs the step's tool calls as one batch: what came of it (a halt, a batch left waiting, a block).
   * A recovered batch needs nothing of the step's inference: its step was cut off before this process.
   */
  run(step: { readonly current: Inference; text(): string }): MaybePromise<LoopInput> {
    const recovered = this.#recovered;
    if (recovered !== undefined) {
      this.#recovered = undefined;
      this.#batch = recovered;
      return andThen(recovered.begin(), StepBatch.#batched, recovered);
    }
    const host = this.#host;
    const batch = ToolBatch.open(host, step.current.result.toolCalls, step.text(), host.env.ids.next('message'));
    this.#batch = batch;
    const begun = batch.begin();
    const ran = begun === undefined ? batch.run() : andThen(begun, StepBatch.#runUnlessHalted, batch);
    return andThen(ran, StepBatch.#batched, batch);
  }

  // The continuations of a batch and its publication are named once: a batch that is here costs no closure.
  static #runUnlessHalted(halt: Halt | undefined, batch: ToolBatch): Halting {
    return halt === undefined ? batch.run() : halt;
  }

  static #batched(halt: Halt | undefined, batch: ToolBatch): LoopInput {
    if (halt !== undefined) return { type: 'batched', stop: halt, waiting: false, blocked: undefined };
    return { type: 'batched', stop: undefined, waiting: deriveRunStatus(batch.statuses()) === 'waiting', blocked: batch.blockedReason };
  }

  /** Publishes the finished batch of the step: its messages join the history; its record goes with the step's end. */
  publish(): Halting {
    return this.#publish(this.#batch as ToolBatch, true);
  }

  /** Publishes a batch a resume finished: the step it belonged to had ended, so its record is cleared at once. */
  publishResumed(batch: ToolBatch): Halting {
    return this.#publish(batch, false);
  }

  #publish(batch: ToolBatch, withinStep: boolean): Halting {
    return andThen(batch.publish(this.#newMessageId), StepBatch.#published, this, withinStep);
  }

  readonly #newMessageId = (): string => this.#host.env.ids.next('message');

  static #published(published: Halt | readonly Message[], self: StepBatch, withinStep: boolean): Halting {
    if (isHalt(published)) return published;
    for (const m of published) self.#messages.push(m);
    self.#batch = undefined;
    if (withinStep) {
      self.#clearRecord = true;
      return undefined;
    }
    return self.#host.submit(StateCommand.empty().update(ToolBatchKey, { op: 'clear' }));
  }

  /** Adds to the step's StepCompleted commit the clearing of a batch record published within the step. */
  completeStep(completed: StateCommand): void {
    if (this.#clearRecord) completed.update(ToolBatchKey, { op: 'clear' });
    this.#clearRecord = false;
  }
}
