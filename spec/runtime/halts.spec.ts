import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import type { Phase } from '../../src/contract/phase.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { defineStateKey } from '../../src/core/state/state-key.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { harness } from '../support/runtime.ts';
import { z } from 'zod';

/**
 * The loop stops early in two ways of its own: the run is cancelled, or the engine fails (a hook
 * throws, a commit is refused). Both are values every part of a step returns and passes on
 * (`Halt`, ADR 0024) — the loop and the tool batch throw nothing. What a user sees is the same in
 * every phase: the run ends with that termination, one `run_finish`, every announced call closed.
 */

const PHASES_OF_A_RUN: readonly Phase[] = [
  'run_start',
  'step_start',
  'before_inference',
  'after_inference',
  'before_tool_execute',
  'after_tool_execute',
  'step_end',
  'run_end',
];

const script = [{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }];

/** A plugin whose hook at `phase` does `act` the first time it runs (`once`), or every time (`always`). */
function hookAt(phase: Phase, act: () => StateCommand | Promise<StateCommand>, times: 'once' | 'always' = 'once'): RuntimePlugin {
  let done = false;
  return {
    name: 'halting',
    register: (r) =>
      r.registerPhaseHook(phase, () => {
        if (done && times === 'once') return StateCommand.empty();
        done = true;
        return act();
      }),
  };
}
const once = (phase: Phase, act: () => StateCommand | Promise<StateCommand>): RuntimePlugin => hookAt(phase, act, 'once');

const finishes = (events: readonly AgentEvent[]) => events.filter((e): e is Extract<AgentEvent, { event_type: 'run_finish' }> => e.event_type === 'run_finish');

describe('a hook that fails ends the run with an error naming it, in every phase', () => {
  it.each(
    PHASES_OF_A_RUN.flatMap((phase) =>
      (['throws', 'rejects'] as const).flatMap((how) => (['once', 'always'] as const).map((times) => [phase, how, times] as const)),
    ),
  )('%s: the hook %s (%s)', async (phase, how, times) => {
    const failing = hookAt(
      phase,
      () => {
        if (how === 'throws') throw new Error(`broke in ${phase}`);
        return Promise.reject(new Error(`broke in ${phase}`));
      },
      times,
    );
    const h = harness(script, { plugins: [failing] });
    const r = await h.runtime.run({ threadId: 't', messages: [Messages.user('go')] }, h.sink);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const expected = { type: 'error', value: `hook of plugin halting failed in ${phase}: broke in ${phase}` };
    expect(r.value.termination).toEqual(expected);
    expect(finishes(h.sink.events).map((e) => e.termination)).toEqual([expected]);
    expect(checkRunInvariants(h.sink.events)).toEqual([]);
  });
});

describe('a refused commit ends the run with an error naming the key', () => {
  const Unregistered = defineStateKey({ key: 'nobody.registered', init: () => 0, apply: (_v: number, u: number) => u, codec: z.number() });

  it.each(PHASES_OF_A_RUN.flatMap((phase) => (['once', 'always'] as const).map((times) => [phase, times] as const)))(
    '%s: a hook writes a key no plugin registered (%s)',
    async (phase, times) => {
      const h = harness(script, { plugins: [hookAt(phase, () => StateCommand.empty().update(Unregistered, 1), times)] });
      const r = await h.runtime.run({ threadId: 't', messages: [Messages.user('go')] }, h.sink);
      expect(r.ok && r.value.termination).toEqual({ type: 'error', value: expect.stringContaining('nobody.registered') });
      expect(finishes(h.sink.events)).toHaveLength(1);
      expect(checkRunInvariants(h.sink.events)).toEqual([]);
    },
  );
});

describe('a cancellation inside a phase ends the run cancelled', () => {
  // Phases that are cancellation points: the run is cancelled by the time the phase is over. StepEnd
  // and RunEnd are not (a step that began ends; a run that ended keeps its termination).
  it.each(['run_start', 'step_start', 'before_inference', 'after_inference', 'before_tool_execute', 'after_tool_execute'] as const)('%s', async (phase) => {
    const controller = new AbortController();
    const h = harness(script, {
      plugins: [
        once(phase, () => {
          controller.abort();
          return StateCommand.empty();
        }),
      ],
    });
    const r = await h.runtime.run({ threadId: 't', messages: [Messages.user('go')] }, h.sink, { signal: controller.signal });
    expect(r.ok && r.value.termination).toEqual({ type: 'cancelled' });
    expect(finishes(h.sink.events).map((e) => e.termination)).toEqual([{ type: 'cancelled' }]);
    expect(checkRunInvariants(h.sink.events)).toEqual([]);
  });
});

describe('control flow', () => {
  const THROWING = ['src/runtime/run-loop.ts', 'src/runtime/tool-batch.ts'];

  /** `throw` statements and classes extending Error: the exceptions a file uses for control flow. */
  function throwsIn(file: string): string[] {
    const text = readFileSync(resolve(import.meta.dirname, '../..', file), 'utf8');
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    const found: string[] = [];
    const visit = (node: ts.Node): void => {
      if (ts.isThrowStatement(node)) found.push(`${file}:${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1}: throw`);
      if (ts.isClassDeclaration(node) && node.heritageClauses?.some((c) => c.types.some((t) => /Error$/.test(t.expression.getText(sf)))))
        found.push(`${file}: class ${node.name?.getText(sf) ?? ''} extends an Error`);
      ts.forEachChild(node, visit);
    };
    visit(sf);
    return found;
  }

  it('the loop and the tool batch throw nothing and define no exception of their own: cancellation and engine failures are returned', () => {
    expect(THROWING.flatMap(throwsIn)).toEqual([]);
  });
});
