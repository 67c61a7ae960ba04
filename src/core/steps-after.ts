/**
 * A run's step count after one more of its events (book: `AgentRunResult.steps`, "tool step + text
 * step"): a step is one inference and its tool batch, and it counts once, at its `step_start`. A
 * suspended call's batch resumed is part of the step whose inference asked for it and starts none;
 * a step that ends the run (a stop, a block, a cancel) counts like any other. Folded over every
 * segment of a run — before and after each suspension — it is the count the run's result, its stored
 * record, its transcript's `end` record, a delegation's result and the inspector's timeline all give.
 */
export const stepsAfter = (steps: number, event: { readonly event_type?: unknown }): number => (event.event_type === 'step_start' ? steps + 1 : steps);
