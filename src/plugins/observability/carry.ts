import { z } from 'zod';
import { defineStateKey } from '../../core/state/state-key.ts';

/**
 * What a run's later segments take over from its earlier ones (docs/observability.md → One trace
 * per run): its trace, the span of its first segment, the inferences counted so far (so step
 * indexes go on) and its totals. Run-scoped state of the observability plugin, written when a step
 * parks the run, so that it is stored with the waiting run and a runtime that takes the run up from
 * the store (or a replay of that segment, from `request.run_state`) continues the same trace.
 */
export interface RunCarry {
  readonly trace_id: string;
  readonly first_span_id: string;
  /** Segments that ended before the next one. */
  readonly segments: number;
  /** Inferences of the run so far: the next one's `step_index`. */
  readonly steps: number;
  readonly provider: string;
  readonly model: string;
  readonly totals: RunTotals;
}

/** The counts and token totals of a run so far. */
export interface RunTotals {
  readonly inference_count: number;
  readonly tool_count: number;
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly total_tokens: number;
  readonly inference_errors: number;
  readonly tool_errors: number;
}

export const NO_TOTALS: RunTotals = Object.freeze({
  inference_count: 0,
  tool_count: 0,
  input_tokens: 0,
  output_tokens: 0,
  total_tokens: 0,
  inference_errors: 0,
  tool_errors: 0,
});

/** Field by field, `a` and `b` added. */
export function addTotals(a: RunTotals, b: RunTotals): RunTotals {
  return {
    inference_count: a.inference_count + b.inference_count,
    tool_count: a.tool_count + b.tool_count,
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
    inference_errors: a.inference_errors + b.inference_errors,
    tool_errors: a.tool_errors + b.tool_errors,
  };
}

const count = z.number().int().nonnegative();

const RunCarrySchema = z
  .object({
    trace_id: z.string(),
    first_span_id: z.string(),
    segments: count,
    steps: count,
    provider: z.string(),
    model: z.string(),
    totals: z
      .object({
        inference_count: count,
        tool_count: count,
        input_tokens: count,
        output_tokens: count,
        total_tokens: count,
        inference_errors: count,
        tool_errors: count,
      })
      .strict(),
  })
  .strict();

/** The run's carry (run-scoped; a write replaces it). Read with `get`: absent until a step parks the run. */
export const RunCarryKey = defineStateKey<RunCarry, RunCarry>({
  key: 'observability.run_carry',
  init: () => ({ trace_id: '', first_span_id: '', segments: 0, steps: 0, provider: '', model: '', totals: NO_TOTALS }),
  apply: (_previous, next) => next,
  codec: RunCarrySchema as z.ZodType<RunCarry>,
});
