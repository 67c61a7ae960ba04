// Over 500 lines: the stages, nexts and inputs are declared beside the transitions that join them,
// so that the whole control flow of a run reads in one file.
import { TerminationReasons, type TerminationReason } from '../../contract/lifecycle.ts';
import { unreachable } from '../../contract/never.ts';

/**
 * The run loop as a state machine (docs/adr/0053-step-machine.md; book: Run 生命周期与 Phases;
 * core-spec §3): `advanceStep(state, input)` gives the next state, the lifecycle commands to commit,
 * the events to emit — in that order — and what the machine needs next (run a phase, infer, run the
 * tool batch, checkpoint, park, end). It reads no clock, draws no id and runs nothing: the runtime's
 * `RunLoop` interprets each `next` and answers with what came of it. Where a run is, and what its
 * step has found so far, is this value alone: `LoopState` is plain data.
 *
 * A run: the lifecycle's start committed, `run_start`, the RunStart phase and a write-ahead
 * checkpoint; then steps, each at a boundary (cancelled? a handoff?), `step_start`, StepStart,
 * BeforeInference, compaction, an inference (continued while cut by the output limit),
 * AfterInference, then an answer or a tool batch; every step that began ends through the same
 * stages (StepCompleted and the open calls closed, StepEnd, checkpoint, `state_snapshot` and `step_end`), each
 * attempted once, the first halt among them the step's end unless the step already ended with a
 * halt. A plugin's `ContinueRun` turns a natural end into another step; a suspended step parks the
 * run until decisions resume it.
 *
 * A failure of foreign code (a sink, a store, a provider) reaches the machine as `threw`: inside a
 * step the step's end is attempted once more from its start with that failure as the step's end and
 * no further failure reported; outside a step the run ends with it.
 */

/** The phases the loop runs itself (BeforeInference is part of `request_inputs`, RunEnd of `end`). */
export type LoopPhase = 'run_start' | 'step_start' | 'after_inference' | 'step_end';

/** A lifecycle change the interpreter commits, all of one output in one command at one time. */
export type LoopCommand = { readonly op: 'start' } | { readonly op: 'step_completed' } | { readonly op: 'set_waiting' };

/** The loop's own events: the failure of an inference that ends the run. */
export interface LoopEvent {
  readonly event_type: 'error';
  readonly message: string;
  readonly code: string;
}

export type LoopNext =
  /** Commit this output's commands, then come back with `ran` (a refused commit is a halt). */
  | { readonly type: 'commit' }
  /** Emit `run_start`; `ran` with `cancelled` when the run was cancelled meanwhile. */
  | { readonly type: 'emit_run_start' }
  /**
   * Run a phase; `ran` with its halt. With `check`, a phase that went through is answered with the
   * termination the run's state then holds (a stop policy, a plugin's request): `checked`.
   */
  | { readonly type: 'phase'; readonly phase: LoopPhase; readonly cancellable: boolean; readonly check: boolean }
  /** Write the run to the store. */
  | { readonly type: 'checkpoint' }
  /** At a step's boundary: `ran` with `cancelled` when the run was cancelled. */
  | { readonly type: 'abort_check' }
  /** Act as the agent a handoff made active, if it changed; `ran` with `blocked` when it does not resolve. */
  | { readonly type: 'handoff' }
  | { readonly type: 'emit_step_start' }
  /** BeforeInference and the per-step inputs it left (tool filter, override, context), consumed: `ran` with a halt, else `checked`. */
  | { readonly type: 'request_inputs' }
  | { readonly type: 'compact' }
  /** Stream one inference (`continuation`: after what a cut response said and the prompt to go on): `inferred`. */
  | { readonly type: 'infer'; readonly continuation: boolean }
  /** Close as interrupted the calls the inference started. */
  | { readonly type: 'close_started' }
  /** Close as not executed the calls the inference started, and keep its text. */
  | { readonly type: 'answer' }
  /** Open the step's tool batch and run it: `batched`. */
  | { readonly type: 'batch' }
  /** Publish the finished batch (its record is cleared with StepCompleted); `check` as for a phase. */
  | { readonly type: 'publish'; readonly check: boolean }
  /**
   * StepCompleted while the run is running, with the clearing of a published batch's record; then
   * every call announced and not closed is closed as interrupted. `ran` with the commit's halt.
   */
  | { readonly type: 'complete_step' }
  /** `state_snapshot`, then `step_end`. */
  | { readonly type: 'emit_step_end' }
  /** Clear a plugin's `ContinueRun` if there is one: `controlled`. */
  | { readonly type: 'loop_control' }
  /** End the suspended segment, wait for decisions and resume the batch (`after_restart`: the segment ended in another process): `parked`. */
  | { readonly type: 'park'; readonly afterRestart: boolean }
  /** Finish the run with this termination (RunEnd, the final checkpoint, `run_finish`). */
  | { readonly type: 'end'; readonly termination: TerminationReason }
  /** The run is over without a finish of its own: cancelled or let go while it waited (its stream already ended). */
  | { readonly type: 'leave'; readonly termination: TerminationReason }
  /** The input does not fit the stage: a fault of the interpreter, as a value. */
  | { readonly type: 'invalid'; readonly reason: string };

/** What came of a `next`. `stop`: the halt or termination it found (`undefined`: go on). */
export type LoopInput =
  | { readonly type: 'ran'; readonly stop: TerminationReason | undefined }
  | { readonly type: 'checked'; readonly stop: TerminationReason | undefined }
  | {
      readonly type: 'inferred';
      readonly cancelled: boolean;
      /** The provider's failure, when it failed. */
      readonly failure: { readonly message: string; readonly code: string } | undefined;
      /** Cut by the output limit in a way worth continuing (`needsTruncationRecovery`). */
      readonly truncated: boolean;
      readonly maxContinuations: number;
      readonly toolCalls: number;
      /** A consecutive-errors stop policy bounds failed inferences: a failure alone does not end the run. */
      readonly toleratesErrors: boolean;
    }
  | { readonly type: 'batched'; readonly stop: TerminationReason | undefined; readonly waiting: boolean; readonly blocked: string | undefined }
  | { readonly type: 'controlled'; readonly present: boolean; readonly stop: TerminationReason | undefined }
  | { readonly type: 'parked'; readonly left: TerminationReason | undefined; readonly stop: TerminationReason | undefined }
  /** Foreign code failed while the last `next` (or this output's commands and events) ran. */
  | { readonly type: 'threw'; readonly message: string };

export type LoopStage =
  | 'begun'
  | 'announced'
  | 'run_started'
  | 'written'
  | 'boundary'
  | 'handoff'
  | 'step_start'
  | 'step_phase'
  | 'inputs'
  | 'compact'
  | 'infer'
  | 'closed'
  | 'after'
  | 'answer'
  | 'batch'
  | 'suspending'
  | 'publish'
  | 'complete_step'
  | 'step_end'
  | 'checkpoint'
  | 'emit_step_end'
  | 'control'
  | 'parked'
  | 'over';

/** Where the run is and what its step found: plain data, the same shape at every stage. */
export interface LoopState {
  readonly at: LoopStage;
  /** The step's end so far (or, from `control` on, the step's outcome); `undefined`: go on. */
  readonly stop: TerminationReason | undefined;
  /** The first halt among the stages of the step's end. */
  readonly halted: TerminationReason | undefined;
  /** The step's end runs again after a failure of foreign code (`stop` is that failure). */
  readonly failed: boolean;
  /** Continuations asked for after cuts by the output limit, in this run. */
  readonly continuations: number;
  /** What the last inference of the step gave that its later stages need. */
  readonly inference:
    | { readonly cancelled: boolean; readonly failure: LoopEvent | undefined; readonly toolCalls: number; readonly toleratesErrors: boolean }
    | undefined;
  /** Why the step's batch was blocked. */
  readonly blocked: string | undefined;
}

export interface LoopStep {
  readonly state: LoopState;
  readonly commands: readonly LoopCommand[];
  readonly events: readonly LoopEvent[];
  readonly next: LoopNext;
}

const NONE: readonly never[] = Object.freeze([]);
const START: readonly LoopCommand[] = Object.freeze([{ op: 'start' }]);
const SUSPEND: readonly LoopCommand[] = Object.freeze([{ op: 'step_completed' }, { op: 'set_waiting' }]);

/** The nexts that carry nothing of their own, made once. */
const N = {
  commit: { type: 'commit' },
  emit_run_start: { type: 'emit_run_start' },
  run_start: { type: 'phase', phase: 'run_start', cancellable: true, check: false },
  step_start_phase: { type: 'phase', phase: 'step_start', cancellable: true, check: true },
  after_inference: { type: 'phase', phase: 'after_inference', cancellable: true, check: true },
  step_end_phase: { type: 'phase', phase: 'step_end', cancellable: false, check: false },
  checkpoint: { type: 'checkpoint' },
  abort_check: { type: 'abort_check' },
  handoff: { type: 'handoff' },
  emit_step_start: { type: 'emit_step_start' },
  request_inputs: { type: 'request_inputs' },
  compact: { type: 'compact' },
  infer: { type: 'infer', continuation: false },
  infer_again: { type: 'infer', continuation: true },
  close_started: { type: 'close_started' },
  answer: { type: 'answer' },
  batch: { type: 'batch' },
  publish: { type: 'publish', check: true },
  publish_blocked: { type: 'publish', check: false },
  complete_step: { type: 'complete_step' },
  emit_step_end: { type: 'emit_step_end' },
  loop_control: { type: 'loop_control' },
  park: { type: 'park', afterRestart: false },
  resume: { type: 'park', afterRestart: true },
} as const satisfies Record<string, LoopNext>;

const STAGES: readonly LoopStage[] = Object.freeze([
  'begun',
  'announced',
  'run_started',
  'written',
  'boundary',
  'handoff',
  'step_start',
  'step_phase',
  'inputs',
  'compact',
  'infer',
  'closed',
  'after',
  'answer',
  'batch',
  'suspending',
  'publish',
  'complete_step',
  'step_end',
  'checkpoint',
  'emit_step_end',
  'control',
  'parked',
  'over',
] satisfies LoopStage[]);

/**
 * The state at each stage with nothing found yet, made once: most transitions of a step land on one
 * (a tool step ends with nothing to report), so they allocate nothing. States are values; sharing
 * one is safe.
 */
const BARE: Readonly<Record<LoopStage, LoopState>> = Object.freeze(
  Object.fromEntries(
    STAGES.map((at) => [
      at,
      Object.freeze({ at, stop: undefined, halted: undefined, failed: false, continuations: 0, inference: undefined, blocked: undefined }),
    ]),
  ) as Record<LoopStage, LoopState>,
);

/** The next a bare state at each stage asks for, as one step made once (the stages whose next depends on more are absent). */
const BARE_NEXT = Object.freeze({
  announced: N.emit_run_start,
  run_started: N.run_start,
  written: N.checkpoint,
  boundary: N.abort_check,
  handoff: N.handoff,
  step_start: N.emit_step_start,
  step_phase: N.step_start_phase,
  inputs: N.request_inputs,
  compact: N.compact,
  infer: N.infer,
  after: N.after_inference,
  answer: N.answer,
  batch: N.batch,
  publish: N.publish,
  complete_step: N.complete_step,
  step_end: N.step_end_phase,
  checkpoint: N.checkpoint,
  emit_step_end: N.emit_step_end,
  control: N.loop_control,
  parked: N.park,
} satisfies Partial<Record<LoopStage, LoopNext>>);

const BARE_STEP: Readonly<Record<keyof typeof BARE_NEXT, LoopStep>> = Object.freeze(
  Object.fromEntries(
    Object.entries(BARE_NEXT).map(([at, next]) => [at, Object.freeze({ state: BARE[at as LoopStage], commands: NONE, events: NONE, next })]),
  ) as unknown as Record<keyof typeof BARE_NEXT, LoopStep>,
);

const isBare = (s: LoopState): boolean =>
  s.stop === undefined && s.halted === undefined && !s.failed && s.continuations === 0 && s.inference === undefined && s.blocked === undefined;

/**
 * `s` moved to the stage of `target` (a step made once, read by name at the call: no lookup by a
 * computed key), asking for `target`'s next: `target` itself when nothing is found yet.
 */
function moveTo(s: LoopState, target: LoopStep): LoopStep {
  if (isBare(s)) return target;
  const at = target.state.at;
  return {
    state: { at, stop: s.stop, halted: s.halted, failed: s.failed, continuations: s.continuations, inference: s.inference, blocked: s.blocked },
    commands: NONE,
    events: NONE,
    next: target.next,
  };
}

/** A state: the bare one of its stage when nothing is found, else a new one (always of one shape, so the code reading it stays fast). */
function make(
  at: LoopStage,
  stop: TerminationReason | undefined,
  halted: TerminationReason | undefined,
  failed: boolean,
  continuations: number,
  inference: LoopState['inference'],
  blocked: string | undefined,
): LoopState {
  if (stop === undefined && halted === undefined && !failed && continuations === 0 && inference === undefined && blocked === undefined) return BARE[at];
  return { at, stop, halted, failed, continuations, inference, blocked };
}

/** `s` at another stage, nothing else changed. */
function move(s: LoopState, at: LoopStage): LoopState {
  return s === BARE[s.at]
    ? BARE[at]
    : { at, stop: s.stop, halted: s.halted, failed: s.failed, continuations: s.continuations, inference: s.inference, blocked: s.blocked };
}

/** `st` asking for `target`'s next: `target` itself when `st` is its bare state (nothing allocated). */
function to(st: LoopState, target: LoopStep): LoopStep {
  return st === target.state ? target : out(st, target.next);
}

function out(s: LoopState, next: LoopNext, commands: readonly LoopCommand[] = NONE, events: readonly LoopEvent[] = NONE): LoopStep {
  return { state: s, commands, events, next };
}

/** A new run: its lifecycle's start is committed first. */
export function beginRun(): LoopStep {
  return out(BARE.begun, N.commit, START);
}

/** A run taken up from the store, waiting for decisions (its suspended segment ended in another process). */
export function revivedRun(): LoopStep {
  return out(BARE.parked, N.resume);
}

/**
 * A run taken up from the store after its process died while it was running: inside the step whose
 * tool batch the store holds (`inBatch`: the batch goes on from its stored calls, then the step ends
 * as any other), else at a step's boundary (the step that was cut off is taken again from its start).
 */
export function recoveredRun(inBatch: boolean): LoopStep {
  return inBatch ? BARE_STEP.batch : BARE_STEP.boundary;
}

/** Whether the run is over: nothing more is asked of the interpreter. */
export const isOver = (s: LoopState): boolean => s.at === 'over';

/** The stages inside a step (after `step_start` went out and before the step's end): a failure there ends the step. */
const IN_STEP: ReadonlySet<LoopStage> = new Set<LoopStage>([
  'step_phase',
  'inputs',
  'compact',
  'infer',
  'closed',
  'after',
  'answer',
  'batch',
  'suspending',
  'publish',
]);

const END_STAGES: ReadonlySet<LoopStage> = new Set<LoopStage>(['complete_step', 'step_end', 'checkpoint', 'emit_step_end']);

export function advanceStep(s: LoopState, input: LoopInput): LoopStep {
  switch (input.type) {
    case 'ran':
      return ran(s, input.stop);
    case 'checked':
      return checked(s, input.stop);
    case 'inferred':
      return s.at === 'infer' ? inferred(s, input) : invalid(s, input);
    case 'batched':
      return s.at === 'batch' ? batched(s, input) : invalid(s, input);
    case 'controlled':
      return s.at === 'control' ? controlled(s, input) : invalid(s, input);
    case 'parked':
      if (s.at !== 'parked') return invalid(s, input);
      if (input.left !== undefined) return over(s, { type: 'leave', termination: input.left });
      return input.stop !== undefined ? end(s, input.stop) : boundary(s);
    case 'threw':
      return s.at === 'over' ? invalid(s, input) : threw(s, TerminationReasons.error(input.message));
    default:
      return unreachable(input, 'loop input');
  }
}

function ran(s: LoopState, stop: TerminationReason | undefined): LoopStep {
  switch (s.at) {
    case 'begun':
      return stop !== undefined ? end(s, stop) : moveTo(s, BARE_STEP.announced);
    case 'announced':
      return stop !== undefined ? end(s, stop) : moveTo(s, BARE_STEP.run_started);
    case 'run_started':
      return stop !== undefined ? end(s, stop) : moveTo(s, BARE_STEP.written);
    case 'written':
      return stop !== undefined ? end(s, stop) : boundary(s);
    case 'boundary':
      // Cancelled between steps: the run ends at once, no step begun, no ContinueRun asked.
      return stop !== undefined ? end(s, stop) : moveTo(s, BARE_STEP.handoff);
    case 'handoff':
      return stop !== undefined ? control(s, stop) : moveTo(s, BARE_STEP.step_start);
    case 'step_start':
      return moveTo(s, BARE_STEP.step_phase);
    case 'step_phase':
    case 'inputs':
    case 'after':
      // These are answered with `checked` when they went through: a `ran` brings their halt.
      return stop !== undefined ? endStep(s, stop) : invalid(s, { type: 'ran', stop });
    case 'compact':
      return stop !== undefined ? endStep(s, stop) : moveTo(s, BARE_STEP.infer);
    case 'closed':
      return s.inference?.cancelled === true ? endStep(s, TerminationReasons.cancelled()) : to(move(s, 'after'), BARE_STEP.after);
    case 'answer':
      return endStep(s, s.stop ?? TerminationReasons.naturalEnd());
    case 'suspending':
      return endStep(s, stop ?? TerminationReasons.suspended());
    case 'publish':
      if (stop !== undefined) return endStep(s, stop);
      // A published batch that was not blocked is answered with `checked`.
      return s.blocked !== undefined ? endStep(s, TerminationReasons.blocked(s.blocked)) : invalid(s, { type: 'ran', stop });
    case 'complete_step':
      return endStage(s, stop, BARE_STEP.step_end);
    case 'step_end':
      return endStage(s, stop, BARE_STEP.checkpoint);
    case 'checkpoint':
      return endStage(s, stop, BARE_STEP.emit_step_end);
    case 'emit_step_end':
      return control(s, stepOutcome(s, firstHalt(s, stop)));
    case 'infer':
    case 'batch':
    case 'control':
    case 'parked':
    case 'over':
      return invalid(s, { type: 'ran', stop });
    default:
      return unreachable(s.at, 'loop stage');
  }
}

/** A part that asked for a check went through: `stop` is the termination the run's state holds. */
function checked(s: LoopState, stop: TerminationReason | undefined): LoopStep {
  if (s.at === 'step_phase') return stop !== undefined ? endStep(s, stop) : moveTo(s, BARE_STEP.inputs);
  if (s.at === 'inputs') return stop !== undefined ? endStep(s, stop) : moveTo(s, BARE_STEP.compact);
  if (s.at === 'after') return afterChecked(s, stop);
  if (s.at === 'publish' && s.blocked === undefined) return endStep(s, stop);
  return invalid(s, { type: 'checked', stop });
}

function inferred(s: LoopState, input: Extract<LoopInput, { type: 'inferred' }>): LoopStep {
  const ok = !input.cancelled && input.failure === undefined;
  // A response cut by the output limit, with continuations left (book: 截断恢复): the same request again after what it said.
  if (ok && input.truncated && input.maxContinuations > 0 && s.continuations < input.maxContinuations) {
    return out(make('infer', s.stop, s.halted, s.failed, s.continuations + 1, s.inference, s.blocked), N.infer_again);
  }
  const inference = {
    cancelled: input.cancelled,
    failure: input.failure === undefined ? undefined : { event_type: 'error' as const, message: input.failure.message, code: input.failure.code },
    toolCalls: input.toolCalls,
    toleratesErrors: input.toleratesErrors,
  };
  if (!ok) return out(make('closed', s.stop, s.halted, s.failed, s.continuations, inference, s.blocked), N.close_started);
  return out(make('after', s.stop, s.halted, s.failed, s.continuations, inference, s.blocked), N.after_inference);
}

/**
 * After AfterInference and the check: a failed inference ends the step with the stop a policy asked
 * for, else with the failure — unless a consecutive-errors policy bounds them (then go on); the
 * failure that ends the run is its `error` event. Otherwise an answer, or the tool batch.
 */
function afterChecked(s: LoopState, stop: TerminationReason | undefined): LoopStep {
  const inference = s.inference;
  const failure = inference?.failure;
  if (failure !== undefined) {
    if (stop !== undefined) return endStep(s, stop);
    if (inference?.toleratesErrors === true) return endStep(s, undefined);
    return endStep(s, TerminationReasons.error(failure.message), [failure]);
  }
  // From here on the inference has told all it had to: the state forgets it.
  if (stop !== undefined || (inference?.toolCalls ?? 0) === 0)
    return to(make('answer', stop, s.halted, s.failed, s.continuations, undefined, s.blocked), BARE_STEP.answer);
  return to(make('batch', s.stop, s.halted, s.failed, s.continuations, undefined, s.blocked), BARE_STEP.batch);
}

function batched(s: LoopState, input: Extract<LoopInput, { type: 'batched' }>): LoopStep {
  if (input.stop !== undefined) return endStep(s, input.stop);
  if (input.blocked === undefined && input.waiting) return out(move(s, 'suspending'), N.commit, SUSPEND);
  const published = make('publish', s.stop, s.halted, s.failed, s.continuations, s.inference, input.blocked);
  return input.blocked === undefined ? to(published, BARE_STEP.publish) : out(published, N.publish_blocked);
}

/** The step's end, from its first stage, with the termination it found (`undefined`: go on). */
function endStep(s: LoopState, stop: TerminationReason | undefined, events: readonly LoopEvent[] = NONE): LoopStep {
  const ending = make('complete_step', stop, undefined, s.failed, s.continuations, undefined, undefined);
  return events === NONE ? to(ending, BARE_STEP.complete_step) : out(ending, N.complete_step, NONE, events);
}

/** A stage of the step's end went through: its halt kept if it is the first, then the next stage. */
function endStage(s: LoopState, stop: TerminationReason | undefined, target: LoopStep): LoopStep {
  const first = firstHalt(s, stop);
  if (first === s.halted) return moveTo(s, target);
  return out(make(target.state.at, s.stop, first, s.failed, s.continuations, s.inference, s.blocked), target.next);
}

/** The first halt among the stages of the step's end, with what the last stage answered. */
const firstHalt = (s: LoopState, stop: TerminationReason | undefined): TerminationReason | undefined => s.halted ?? (isHalt(stop) ? stop : undefined);

/** A step ends with its own termination when it has one that is a halt, or no halt came of its end; else with that halt. */
function stepOutcome(s: LoopState, halted: TerminationReason | undefined): TerminationReason | undefined {
  if (s.failed) return s.stop;
  return halted === undefined || isHalt(s.stop) ? s.stop : halted;
}

/** After the step: a plugin's `ContinueRun` is asked for (and cleared). */
function control(s: LoopState, outcome: TerminationReason | undefined): LoopStep {
  return to(make('control', outcome, undefined, false, s.continuations, undefined, undefined), BARE_STEP.control);
}

/** `ContinueRun` turns a natural end into another step; it never outlives the step it was asked in. */
function controlled(s: LoopState, input: Extract<LoopInput, { type: 'controlled' }>): LoopStep {
  const outcome = !input.present ? s.stop : (input.stop ?? (s.stop?.type === 'natural_end' ? undefined : s.stop));
  if (outcome === undefined) return boundary(s);
  if (outcome.type === 'suspended') return out(make('parked', undefined, s.halted, s.failed, s.continuations, s.inference, s.blocked), N.park);
  return end(s, outcome);
}

function boundary(s: LoopState): LoopStep {
  return to(make('boundary', undefined, undefined, false, s.continuations, undefined, undefined), BARE_STEP.boundary);
}

function end(s: LoopState, termination: TerminationReason): LoopStep {
  return over(s, { type: 'end', termination });
}

function over(s: LoopState, next: LoopNext): LoopStep {
  return out(make('over', undefined, undefined, s.failed, s.continuations, undefined, undefined), next);
}

/**
 * Foreign code failed. Inside a step, its end is attempted once more from its first stage with the
 * failure as its end; a failure while that runs ends the step with the first. Elsewhere the run
 * ends with it.
 */
function threw(s: LoopState, failure: TerminationReason): LoopStep {
  if (IN_STEP.has(s.at)) return out(make('complete_step', failure, undefined, true, s.continuations, undefined, undefined), N.complete_step);
  if (END_STAGES.has(s.at)) {
    if (s.failed) return control(s, s.stop);
    return out(make('complete_step', failure, undefined, true, s.continuations, s.inference, s.blocked), N.complete_step);
  }
  return end(s, failure);
}

function invalid(s: LoopState, input: LoopInput): LoopStep {
  return out(s, { type: 'invalid', reason: `${input.type} does not fit the loop at ${s.at}` });
}

const isHalt = (t: TerminationReason | undefined): boolean => t?.type === 'cancelled' || t?.type === 'error';
