/**
 * Runs a Mealy machine over its whole input: each step maps (state, input) to the next state and its
 * outputs; `finish` adds what the final state still owes (closing what is open). The protocol
 * encoders are such machines over `AgentEvent`s.
 */
export function runMealy<S, I, O>(
  initial: S,
  step: (state: S, input: I) => readonly [S, readonly O[]],
  finish: (state: S) => readonly O[],
  inputs: Iterable<I>,
): O[] {
  let s = initial;
  const out: O[] = [];
  for (const input of inputs) {
    const [next, emitted] = step(s, input);
    s = next;
    for (const o of emitted) out.push(o);
  }
  for (const o of finish(s)) out.push(o);
  return out;
}
