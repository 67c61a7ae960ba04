import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { toRunStatus, TerminationReasons, type TerminationReason } from '../../src/contract/lifecycle.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { thrown, type Halt, type Halting } from '../../src/runtime/halt.ts';
import { finishRun, type FinishHost } from '../../src/runtime/loop/finish.ts';
import { RunLifecycle } from '../../src/runtime/loop-keys.ts';

// The end of a run answers now when every part on the way does, and otherwise does exactly what
// an `async` function awaiting each part did: the same calls in the same order, the same events,
// the same termination, the same rejection. `reference` is that function, kept here as the spec.

async function reference(host: FinishHost, termination: TerminationReason): Promise<TerminationReason> {
  let final = termination;
  try {
    const lifecycle = host.phase.store.snapshot().get(RunLifecycle);
    const target = toRunStatus(final);
    let halt: Halt | undefined;
    if (target.status === 'done' && lifecycle !== undefined && lifecycle.status !== 'done') {
      halt = await host.submit(StateCommand.empty().update(RunLifecycle, { op: 'done', reason: target.doneReason ?? 'unknown', at: host.env.clock.now() }));
    }
    if (halt === undefined) halt = await host.runPhase('run_end', { messages: host.messages() }, false);
    if (halt !== undefined && final.type !== 'error') final = halt;
  } catch (e) {
    if (final.type !== 'error') final = thrown(e);
  }
  const response = host.response();
  try {
    await host.checkpoint(final);
  } catch {
    // attempted
  }
  await host.emitSnapshot();
  const lifecycle = host.phase.store.snapshot().get(RunLifecycle);
  await host.emit({
    event_type: 'run_finish',
    thread_id: host.threadId,
    run_id: host.runId,
    result: { response, status: lifecycle?.status ?? 'done', ...(lifecycle?.status_reason !== undefined ? { status_reason: lifecycle.status_reason } : {}) },
    termination: final,
  });
  return final;
}

/** How a part of the host answers: at once or later, with its value, a halt, or a failure. */
type Answer = 'now' | 'later' | 'halt-now' | 'halt-later' | 'throw' | 'reject';
type Part = 'submit' | 'runPhase' | 'checkpoint' | 'emitSnapshot' | 'emit';

interface Script {
  readonly termination: TerminationReason;
  readonly lifecycle: 'none' | 'running' | 'done';
  readonly answers: Readonly<Record<Part, Answer>>;
}

const LIFECYCLE = { status: 'running', updated_at: 1 } as const;

/** A host that logs every call it gets, answering as `script` says. */
function hostOf(script: Script): { host: FinishHost; log: string[] } {
  const log: string[] = [];
  let lifecycle: unknown =
    script.lifecycle === 'none' ? undefined : script.lifecycle === 'done' ? { ...LIFECYCLE, status: 'done', status_reason: 'natural' } : LIFECYCLE;
  const answer = (part: Part, done: () => void): Halting => {
    log.push(part);
    const how = script.answers[part];
    const halt: Halt = TerminationReasons.error(`${part} halted`) as Halt;
    switch (how) {
      case 'now':
        done();
        return undefined;
      case 'later':
        return Promise.resolve().then(() => (done(), undefined));
      case 'halt-now':
        return halt;
      case 'halt-later':
        return Promise.resolve(halt);
      case 'throw':
        throw new Error(`${part} threw`);
      case 'reject':
        return Promise.reject(new Error(`${part} rejected`));
    }
  };
  const host = {
    env: { clock: { now: () => (log.push('now'), 7) } },
    phase: { store: { snapshot: () => ({ get: () => lifecycle }) } },
    threadId: 't',
    runId: 'r',
    messages: () => (log.push('messages'), []),
    response: () => (log.push('response'), 'the answer'),
    submit: () => answer('submit', () => (lifecycle = { ...LIFECYCLE, status: 'done', status_reason: 'natural' })),
    runPhase: () => answer('runPhase', () => undefined),
    checkpoint: () => answer('checkpoint', () => undefined),
    emitSnapshot: () => answer('emitSnapshot', () => undefined) as Promise<void> | undefined,
    emit: (e: AgentEvent) => (log.push(JSON.stringify(e)), answer('emit', () => undefined) as Promise<void> | undefined),
  } as unknown as FinishHost;
  return { host, log };
}

async function outcome(run: () => unknown): Promise<{ value?: unknown; error?: string }> {
  try {
    return { value: await run() };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

const answers = fc.constantFrom<Answer>('now', 'later', 'halt-now', 'halt-later', 'throw', 'reject');
const scripts: fc.Arbitrary<Script> = fc.record({
  termination: fc.constantFrom(
    TerminationReasons.naturalEnd(),
    TerminationReasons.cancelled(),
    TerminationReasons.suspended(),
    TerminationReasons.error('it failed before'),
    TerminationReasons.stopped('max_rounds'),
    TerminationReasons.blocked('policy'),
  ),
  lifecycle: fc.constantFrom('none', 'running', 'done'),
  answers: fc.record({ submit: answers, runPhase: answers, checkpoint: answers, emitSnapshot: answers, emit: answers }),
});

describe('the end of a run', () => {
  it('makes the calls, events, termination and failure an awaiting end makes, however each part answers', async () => {
    await fc.assert(
      fc.asyncProperty(scripts, async (script) => {
        const expected = hostOf(script);
        const wanted = await outcome(() => reference(expected.host, script.termination));
        const actual = hostOf(script);
        const got = await outcome(() => finishRun(actual.host, script.termination));
        expect(got).toStrictEqual(wanted);
        expect(actual.log).toStrictEqual(expected.log);
      }),
      { numRuns: 3_000 },
    );
  });

  it('answers now, not with a promise, when every part answers now', () => {
    const all = { submit: 'now', runPhase: 'now', checkpoint: 'now', emitSnapshot: 'now', emit: 'now' } as const;
    const { host, log } = hostOf({ termination: TerminationReasons.naturalEnd(), lifecycle: 'running', answers: all });
    expect(finishRun(host, TerminationReasons.naturalEnd())).toStrictEqual({ type: 'natural_end' });
    expect(log).toStrictEqual([
      'now',
      'submit',
      'messages',
      'runPhase',
      'response',
      'checkpoint',
      'emitSnapshot',
      JSON.stringify({
        event_type: 'run_finish',
        thread_id: 't',
        run_id: 'r',
        result: { response: 'the answer', status: 'done', status_reason: 'natural' },
        termination: { type: 'natural_end' },
      }),
      'emit',
    ]);
  });

  it('answers with a promise once a part does, and a throw of the sink now is thrown now', async () => {
    const base = { submit: 'now', runPhase: 'now', checkpoint: 'now', emitSnapshot: 'now', emit: 'now' } as const;
    const later = hostOf({ termination: TerminationReasons.naturalEnd(), lifecycle: 'running', answers: { ...base, checkpoint: 'later' } });
    const pending = finishRun(later.host, TerminationReasons.naturalEnd());
    expect(pending).toBeInstanceOf(Promise);
    await expect(pending).resolves.toStrictEqual({ type: 'natural_end' });
    const throwing = hostOf({ termination: TerminationReasons.naturalEnd(), lifecycle: 'running', answers: { ...base, emit: 'throw' } });
    expect(() => finishRun(throwing.host, TerminationReasons.naturalEnd())).toThrow('emit threw');
  });
});
