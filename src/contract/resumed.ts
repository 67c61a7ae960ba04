import { z } from 'zod';

/**
 * The activity type a run taken up again after its process stopped emits right after its new
 * `run_start`: where it went on. The AI SDK and AG-UI carry it as any activity; the protocols that
 * carry no activities (A2A, ACP, MCP) say it in their own way (src/protocols/resumed.ts).
 */
export const RUN_RESUMED = 'run_resumed';

/**
 * What a `run_resumed` activity holds: inside the tool batch of step `step`, at the start of step
 * `step` (the model is asked again), after the answer of step `step` (the run ends), or at the end
 * of step `step`, whose batch is not taken up (the run ends interrupted).
 */
export const RunResumedSchema = z.object({
  from: z.enum(['tool_batch', 'inference', 'answered', 'step_end']),
  step: z.number().int().nonnegative(),
});

export type RunResumed = z.infer<typeof RunResumedSchema>;
