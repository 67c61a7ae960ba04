import fc from 'fast-check';
import type { Message } from '../../src/contract/message.ts';

/** One unit of a well-formed conversation: a single message, or an assistant with its tool results. */
const unit = (i: number): fc.Arbitrary<Message[]> =>
  fc.oneof(
    { weight: 1, arbitrary: fc.string({ maxLength: 80 }).map((t): Message[] => [{ id: `s${i}`, role: 'system', content: [{ type: 'text', text: t }] }]) },
    { weight: 4, arbitrary: fc.string({ maxLength: 400 }).map((t): Message[] => [{ id: `u${i}`, role: 'user', content: [{ type: 'text', text: t }] }]) },
    { weight: 3, arbitrary: fc.string({ maxLength: 400 }).map((t): Message[] => [{ id: `a${i}`, role: 'assistant', content: [{ type: 'text', text: t }] }]) },
    {
      weight: 3,
      arbitrary: fc.tuple(fc.integer({ min: 1, max: 3 }), fc.string({ maxLength: 300 })).map(([k, t]): Message[] => {
        const calls = Array.from({ length: k }, (_, j) => ({ id: `c${i}_${j}`, name: 'tool', arguments: { q: t.slice(0, 20) } }));
        return [
          { id: `a${i}`, role: 'assistant', content: [], tool_calls: calls },
          ...calls.map((c): Message => ({ id: `t${c.id}`, role: 'tool', tool_call_id: c.id, content: [{ type: 'text', text: t }] })),
        ];
      }),
    },
  );

/** A well-formed conversation: every tool call answered right after its assistant message. */
export const conversation = (maxUnits = 40): fc.Arbitrary<Message[]> =>
  fc.integer({ min: 0, max: maxUnits }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => unit(i))).map((units) => units.flat()));

/** Whether `sub` is an order-preserving subsequence of `seq` (by identity). */
export function isSubsequence<T>(sub: readonly T[], seq: readonly T[]): boolean {
  let j = 0;
  for (const x of seq) if (j < sub.length && sub[j] === x) j++;
  return j === sub.length;
}

/** Every result has its call earlier; every call has its result. */
export function pairsWhole(messages: readonly Message[]): boolean {
  const calls = new Set<string>();
  const results = new Set<string>();
  for (const m of messages) {
    if (m.role === 'assistant') for (const c of m.tool_calls ?? []) calls.add(c.id);
    if (m.role === 'tool') {
      if (m.tool_call_id === undefined || !calls.has(m.tool_call_id)) return false;
      results.add(m.tool_call_id);
    }
  }
  return [...calls].every((id) => results.has(id));
}
