import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TerminationReasons, type TerminationReason } from '../../../src/contract/lifecycle.ts';
import { advanceStep, beginRun, revivedRun, type LoopInput, type LoopNext, type LoopState, type LoopStep } from '../../../src/core/loop/step.ts';

type Advance = (s: LoopState, input: LoopInput) => LoopStep;

/** Turns of one step at most: its stages, every continuation (≤ 3 here), and its end run twice after a failure. */
const STEP_BOUND = 40;
/** From this step on, the run's state holds a stop (a max-rounds policy): every check reports it. */
const STOP_FROM = 4;

/** What the run's state may hold as its end (a check's answer). */
const stops: readonly TerminationReason[] = [
  TerminationReasons.cancelled(),
  TerminationReasons.error('boom'),
  TerminationReasons.blocked('no'),
  TerminationReasons.stopped('max_rounds'),
  TerminationReasons.naturalEnd(),
  TerminationReasons.behaviorRequested(),
];
/** What a phase, a commit, a checkpoint or an emit may end with: a halt. */
const halts: readonly TerminationReason[] = [TerminationReasons.cancelled(), TerminationReasons.error('store refused')];

/** A source of choices: the interpreter's answers are drawn from it (fast-check shrinks it). */
class Choices {
  #i = 0;
  readonly #seq: readonly number[];
  constructor(seq: readonly number[]) {
    this.#seq = seq;
  }
  next(n: number): number {
    const v = this.#seq.length === 0 ? 0 : (this.#seq[this.#i++ % this.#seq.length] as number);
    return v % n;
  }
  /** Mostly nothing: one time in `odds`, one of `of`. */
  stop(odds = 4, of: readonly TerminationReason[] = halts): TerminationReason | undefined {
    return this.next(odds) === 0 ? of[this.next(of.length)] : undefined;
  }
}

/** Whether the machine asks the answer to a next to carry a check of the run's state when the part went through. */
const asksCheck = (next: LoopNext): boolean => next.type === 'request_inputs' || ((next.type === 'phase' || next.type === 'publish') && next.check);

/** An interpreter's answer to `next`, drawn from `c`: any answer of the right kind, a failure of foreign code now and then. */
function answer(next: LoopNext, c: Choices, step: number, throws: boolean): LoopInput {
  if (throws && c.next(25) === 0) return { type: 'threw', message: 'sink failed' };
  if (asksCheck(next)) {
    const halt = c.stop(8);
    if (halt !== undefined) return { type: 'ran', stop: halt };
    return { type: 'checked', stop: step >= STOP_FROM ? TerminationReasons.stopped('max_rounds') : c.stop(6, stops) };
  }
  switch (next.type) {
    case 'handoff':
      return { type: 'ran', stop: c.stop(10, [TerminationReasons.blocked('handoff resolve failed')]) };
    case 'infer':
      return {
        type: 'inferred',
        cancelled: c.next(10) === 0,
        failure: c.next(6) === 0 ? { message: 'provider down', code: 'provider' } : undefined,
        truncated: c.next(3) === 0,
        maxContinuations: c.next(4),
        toolCalls: c.next(3),
        toleratesErrors: c.next(2) === 0,
      };
    case 'batch':
      return { type: 'batched', stop: c.stop(8), waiting: c.next(3) === 0, blocked: c.next(8) === 0 ? 'gate said no' : undefined };
    case 'loop_control':
      return { type: 'controlled', present: c.next(3) === 0, stop: c.stop(10) };
    case 'park': {
      const k = c.next(4);
      return { type: 'parked', left: k === 0 ? TerminationReasons.cancelled() : undefined, stop: k === 1 ? TerminationReasons.error('halt') : undefined };
    }
    default:
      return { type: 'ran', stop: c.stop(8) };
  }
}

interface Trace {
  readonly nexts: LoopNext[];
  readonly final: LoopNext | undefined;
  /** Turns of each step (from one `abort_check` to the next). */
  readonly perStep: number[];
  readonly threw: boolean;
}

/** Runs a machine with answers drawn from `seq`, for at most `limit` turns. */
function run(advance: Advance, first: LoopStep, seq: readonly number[], throws = true, limit = 2_000): Trace {
  const c = new Choices(seq);
  const nexts: LoopNext[] = [];
  const perStep: number[] = [0];
  let threw = false;
  let s = first;
  for (let turn = 0; turn < limit; turn++) {
    const next = s.next;
    nexts.push(next);
    if (next.type === 'end' || next.type === 'leave' || next.type === 'invalid') return { nexts, final: next, perStep, threw };
    if (next.type === 'abort_check') perStep.push(0);
    perStep[perStep.length - 1] = (perStep[perStep.length - 1] as number) + 1;
    const input = answer(next, c, perStep.length - 1, throws);
    if (input.type === 'threw') threw = true;
    s = advance(s.state, input);
  }
  return { nexts, final: undefined, perStep, threw };
}

const seqs = fc.array(fc.nat({ max: 1_000 }), { minLength: 1, maxLength: 200 });
const starts = fc.constantFrom<() => LoopStep>(beginRun, () => revivedRun());

/** The run ends, every step within its bound, with one final next that is never invalid. */
function terminates(advance: Advance): fc.IPropertyWithHooks<[() => LoopStep, number[]]> {
  return fc.property(starts, seqs, (start, seq) => {
    const t = run(advance, start(), seq);
    expect(t.final).toBeDefined();
    expect(t.final?.type).not.toBe('invalid');
    for (const n of t.perStep) expect(n).toBeLessThanOrEqual(STEP_BOUND);
    expect(t.perStep.length).toBeLessThanOrEqual(STOP_FROM + 3);
  });
}

/** Without failures of foreign code, every step that began passes each stage of its end once, in order, before ContinueRun is asked. */
function closesEveryStep(advance: Advance): fc.IPropertyWithHooks<[() => LoopStep, number[]]> {
  const END = ['complete_step', 'phase:step_end', 'checkpoint', 'emit_step_end'];
  return fc.property(starts, seqs, (start, seq) => {
    const t = run(advance, start(), seq, false);
    const names = t.nexts.map((n) => (n.type === 'phase' ? `phase:${n.phase}` : n.type));
    let open: string[] | undefined;
    for (const name of names) {
      if (name === 'emit_step_start') open = [];
      else if (open !== undefined && END.includes(name)) open.push(name);
      else if (name === 'loop_control' && open !== undefined) {
        expect(open).toEqual(END);
        open = undefined;
      }
    }
    expect(open).toBeUndefined();
  });
}

describe('the step machine (src/core/loop/step.ts)', () => {
  it('ends every run: each step within its bound of turns, the run within a step of its stop policy, one final next', () => {
    fc.assert(terminates(advanceStep), { numRuns: 500 });
  });

  it('closes every step it began: StepCompleted with its open calls, StepEnd, checkpoint, snapshot with step_end — once each, in that order', () => {
    fc.assert(closesEveryStep(advanceStep), { numRuns: 500 });
  });

  it('is over after its final next: any further input is refused as invalid, never a second end', () => {
    fc.assert(
      fc.property(starts, seqs, fc.array(fc.nat(), { minLength: 1, maxLength: 20 }), (start, seq, more) => {
        const c = new Choices(seq);
        let step = start();
        let turns = 0;
        while (!['end', 'leave', 'invalid'].includes(step.next.type)) {
          if (step.next.type === 'abort_check') turns++;
          step = advanceStep(step.state, answer(step.next, c, turns, true));
        }
        expect(['end', 'leave']).toContain(step.next.type);
        const last = step.state;
        for (const k of more) {
          const inputs: LoopInput[] = [
            { type: 'ran', stop: undefined },
            { type: 'checked', stop: TerminationReasons.naturalEnd() },
            { type: 'parked', left: undefined, stop: undefined },
            { type: 'threw', message: 'late' },
          ];
          const after = advanceStep(last, inputs[k % inputs.length] as LoopInput);
          expect(after.next.type).toBe('invalid');
          expect(after.state).toBe(last);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('refuses an input that does not fit its stage, and stays where it was', () => {
    const first = beginRun();
    const wrong = advanceStep(first.state, {
      type: 'inferred',
      cancelled: false,
      failure: undefined,
      truncated: false,
      maxContinuations: 0,
      toolCalls: 0,
      toleratesErrors: false,
    });
    expect(wrong.next).toEqual({ type: 'invalid', reason: 'inferred does not fit the loop at begun' });
    expect(wrong.state).toBe(first.state);
  });

  it('keeps the run in plain data: a state written as JSON and read back goes on exactly as the original', () => {
    fc.assert(
      fc.property(starts, seqs, (start, seq) => {
        const c1 = new Choices(seq);
        const c2 = new Choices(seq);
        let a = start();
        let b = start();
        for (let i = 0; i < 300 && !['end', 'leave', 'invalid'].includes(a.next.type); i++) {
          const input = answer(a.next, c1, Math.floor(i / 30), true);
          expect(answer(b.next, c2, Math.floor(i / 30), true)).toEqual(input);
          a = advanceStep(a.state, input);
          b = advanceStep(JSON.parse(JSON.stringify(b.state)) as LoopState, input);
          expect(b).toEqual(a);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('ends a step with its own halt over a halt of its end, with the first halt of its end over a stop that is not one', () => {
    const toEnd = (inputs: readonly LoopInput[]): LoopStep => {
      // A step at StepStart: its phase halts or not, then the end's six stages answer `inputs`.
      let s = beginRun();
      for (const input of [
        { type: 'ran', stop: undefined },
        { type: 'ran', stop: undefined },
        { type: 'ran', stop: undefined },
        { type: 'ran', stop: undefined },
        { type: 'ran', stop: undefined },
        { type: 'ran', stop: undefined },
        { type: 'ran', stop: undefined },
      ] as LoopInput[])
        s = advanceStep(s.state, input);
      expect(s.next).toEqual({ type: 'phase', phase: 'step_start', cancellable: true, check: true });
      s = advanceStep(s.state, inputs[0] as LoopInput);
      for (const input of inputs.slice(1)) s = advanceStep(s.state, input);
      return s;
    };
    const ran = (stop?: TerminationReason): LoopInput => ({ type: 'ran', stop });
    const checked = (stop: TerminationReason): LoopInput => ({ type: 'checked', stop });
    const error = TerminationReasons.error('store refused');
    const cancelled = TerminationReasons.cancelled();
    // StepStart halted (cancelled); a later stage of the end (StepEnd) failed too: the step ends cancelled.
    expect(toEnd([ran(cancelled), ran(), ran(error), ran(), ran()]).state.stop).toEqual(cancelled);
    // The state asked to stop after StepStart (not a halt); StepEnd failed: the step ends with the failure.
    const stopped = TerminationReasons.stopped('max_rounds');
    expect(toEnd([checked(stopped), ran(), ran(error), ran(), ran()]).state.stop).toEqual(error);
    // A halt of the last stage counts as any other.
    expect(toEnd([checked(stopped), ran(), ran(), ran(), ran(error)]).state.stop).toEqual(error);
    // Nothing failed: the stop stands, and ContinueRun is asked next.
    const ended = toEnd([checked(stopped), ran(), ran(), ran(), ran()]);
    expect(ended.state.stop).toEqual(stopped);
    expect(ended.next).toEqual({ type: 'loop_control' });
  });

  it('turns a natural end into another step when a plugin asked to continue, and nothing else', () => {
    const controlled = (stop: TerminationReason | undefined, present: boolean): LoopNext => {
      const s: LoopState = { at: 'control', stop, halted: undefined, failed: false, continuations: 0, inference: undefined, blocked: undefined };
      return advanceStep(s, { type: 'controlled', present, stop: undefined }).next;
    };
    expect(controlled(TerminationReasons.naturalEnd(), true)).toEqual({ type: 'abort_check' });
    expect(controlled(TerminationReasons.naturalEnd(), false)).toEqual({ type: 'end', termination: TerminationReasons.naturalEnd() });
    expect(controlled(TerminationReasons.stopped('max_rounds'), true)).toEqual({ type: 'end', termination: TerminationReasons.stopped('max_rounds') });
    expect(controlled(TerminationReasons.suspended(), false)).toEqual({ type: 'park', afterRestart: false });
    expect(controlled(undefined, false)).toEqual({ type: 'abort_check' });
  });

  describe('each rule, on a scripted run', () => {
    type Key = string;
    const keyOf = (n: LoopNext): Key => (n.type === 'phase' ? `phase:${n.phase}` : n.type);
    const ran = (stop?: TerminationReason): LoopInput => ({ type: 'ran', stop });
    const inferred = (over: Partial<Extract<LoopInput, { type: 'inferred' }>> = {}): LoopInput => ({
      type: 'inferred',
      cancelled: false,
      failure: undefined,
      truncated: false,
      maxContinuations: 0,
      toolCalls: 0,
      toleratesErrors: false,
      ...over,
    });
    /** Drives a run from its start: each next takes the first answer queued for it, else the plain one; the trace of nexts and the last. */
    const script = (answers: Record<Key, LoopInput[]>, first: LoopStep = beginRun()): { trace: Key[]; nexts: LoopNext[]; last: LoopNext; events: string[] } => {
      const trace: Key[] = [];
      const nexts: LoopNext[] = [];
      const events: string[] = [];
      let s = first;
      for (let i = 0; i < 400 && !['end', 'leave', 'invalid'].includes(s.next.type); i++) {
        const key = keyOf(s.next);
        trace.push(key);
        nexts.push(s.next);
        for (const e of s.events) events.push(e.event_type);
        const plain: LoopInput = asksCheck(s.next)
          ? { type: 'checked', stop: undefined }
          : key === 'infer'
            ? inferred()
            : key === 'batch'
              ? { type: 'batched', stop: undefined, waiting: false, blocked: undefined }
              : key === 'loop_control'
                ? { type: 'controlled', present: false, stop: undefined }
                : key === 'park'
                  ? { type: 'parked', left: undefined, stop: undefined }
                  : ran();
        s = advanceStep(s.state, answers[key]?.shift() ?? plain);
      }
      return { trace, nexts, last: s.next, events };
    };
    const error = (m: string): TerminationReason => TerminationReasons.error(m);
    const count = (trace: readonly Key[], key: Key): number => trace.filter((k) => k === key).length;

    it("the first halt of a step's end is its end, not a later one", () => {
      const r = script({ complete_step: [ran(error('first'))], 'phase:step_end': [ran(error('second'))] });
      expect(r.last).toEqual({ type: 'end', termination: error('first') });
    });

    it('a stop the state holds after StepStart ends the step before its request', () => {
      const r = script({ 'phase:step_start': [{ type: 'checked', stop: TerminationReasons.stopped('max_rounds') }] });
      expect(r.trace).not.toContain('request_inputs');
      expect(r.last).toEqual({ type: 'end', termination: TerminationReasons.stopped('max_rounds') });
    });

    it('a failed inference ends the run with its error event, unless a consecutive-errors policy bounds failures (then another step)', () => {
      const failure = { message: 'provider down', code: 'provider' };
      const ended = script({ infer: [inferred({ failure })] });
      expect(ended.events).toEqual(['error']);
      expect(ended.last).toEqual({ type: 'end', termination: error('provider down') });
      const tolerated = script({ infer: [inferred({ failure, toleratesErrors: true })] });
      expect(tolerated.events).toEqual([]);
      expect(count(tolerated.trace, 'emit_step_start')).toBe(2);
    });

    it('a failure of foreign code inside a step runs its end once, and ends the run with the failure over any halt of the end', () => {
      const r = script({ compact: [{ type: 'threw', message: 'sink failed' }], checkpoint: [ran(), ran(error('store refused'))] });
      expect(count(r.trace, 'complete_step')).toBe(1);
      expect(count(r.trace, 'emit_step_end')).toBe(1);
      expect(r.last).toEqual({ type: 'end', termination: error('sink failed') });
    });

    it('a failure while a step ends runs its end again from its start, then ends the run with that failure', () => {
      const r = script({ 'phase:step_end': [{ type: 'threw', message: 'sink failed' }] });
      expect(count(r.trace, 'complete_step')).toBe(2);
      expect(count(r.trace, 'emit_step_end')).toBe(1);
      expect(r.last).toEqual({ type: 'end', termination: error('sink failed') });
    });

    it('a response cut by the output limit is asked to go on up to the limit, then the step goes on', () => {
      const cut = inferred({ truncated: true, maxContinuations: 2 });
      const r = script({ infer: [cut, cut, cut] });
      expect(count(r.trace, 'infer')).toBe(3);
      expect(r.last).toEqual({ type: 'end', termination: TerminationReasons.naturalEnd() });
    });

    it('a cancelled inference closes what it started and ends the step cancelled, with no AfterInference', () => {
      const r = script({ infer: [inferred({ cancelled: true })] });
      expect(r.trace).toContain('close_started');
      expect(r.trace).not.toContain('phase:after_inference');
      expect(r.last).toEqual({ type: 'end', termination: TerminationReasons.cancelled() });
    });

    it('a part asked for a check answers with it when it went through: a bare `ran` there is refused', () => {
      const r = script({ 'phase:after_inference': [ran()] });
      expect(r.last).toEqual({ type: 'invalid', reason: 'ran does not fit the loop at after' });
      const published = script({ infer: [inferred({ toolCalls: 1 })], publish: [ran()] });
      expect(published.last).toEqual({ type: 'invalid', reason: 'ran does not fit the loop at publish' });
    });

    it('a blocked batch is published and ends the run blocked, with no check asked', () => {
      const r = script({ infer: [inferred({ toolCalls: 1 })], batch: [{ type: 'batched', stop: undefined, waiting: false, blocked: 'no' }] });
      expect(r.trace).toContain('publish');
      expect(r.nexts).toContainEqual({ type: 'publish', check: false });
      expect(r.last).toEqual({ type: 'end', termination: TerminationReasons.blocked('no') });
    });

    it('a handoff that does not resolve ends the run blocked, ContinueRun asked first', () => {
      const r = script({ handoff: [ran(TerminationReasons.blocked('handoff resolve failed'))] });
      expect(r.trace.slice(-1)).toEqual(['loop_control']);
      expect(r.trace).not.toContain('emit_step_start');
      expect(r.last).toEqual({ type: 'end', termination: TerminationReasons.blocked('handoff resolve failed') });
    });

    it('a batch left waiting parks the run, unless committing the wait halts; a resume goes on, a stop after it ends the run', () => {
      const waiting: LoopInput = { type: 'batched', stop: undefined, waiting: true, blocked: undefined };
      const parked = script({ infer: [inferred({ toolCalls: 1 })], batch: [waiting], park: [{ type: 'parked', left: undefined, stop: error('halt') }] });
      expect(parked.trace).toContain('park');
      expect(parked.last).toEqual({ type: 'end', termination: error('halt') });
      const refused = script({ infer: [inferred({ toolCalls: 1 })], batch: [waiting], commit: [ran(), ran(error('refused'))] });
      expect(refused.trace).not.toContain('park');
      expect(refused.last).toEqual({ type: 'end', termination: error('refused') });
      const left = script({
        infer: [inferred({ toolCalls: 1 })],
        batch: [waiting],
        park: [{ type: 'parked', left: TerminationReasons.cancelled(), stop: undefined }],
      });
      expect(left.last).toEqual({ type: 'leave', termination: TerminationReasons.cancelled() });
    });
  });

  describe('catches a deliberately broken transition', () => {
    /** Skips the checkpoint of a step's end (StepEnd goes straight to the snapshot). */
    const skipsCheckpoint: Advance = (s, input) => {
      const out = advanceStep(s, input);
      return out.next.type === 'checkpoint' && out.state.at === 'checkpoint' ? advanceStep(out.state, { type: 'ran', stop: undefined }) : out;
    };
    /** Sends a finished step back to its start instead of asking ContinueRun: a step that never ends. */
    const loopsBack: Advance = (s, input) => {
      const out = advanceStep(s, input);
      return out.next.type === 'loop_control' ? { ...out, state: { ...out.state, at: 'step_start' }, next: { type: 'emit_step_start' } } : out;
    };

    it('a step that does not write its checkpoint fails the closing property', () => {
      expect(fc.check(closesEveryStep(skipsCheckpoint), { numRuns: 200 }).failed).toBe(true);
    });

    it('a step that never ends fails the termination property', () => {
      expect(fc.check(terminates(loopsBack), { numRuns: 200 }).failed).toBe(true);
    });
  });
});
