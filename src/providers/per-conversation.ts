import type { StreamPart } from '../contract/stream.ts';
import type { InferenceRequest, LlmExecutor } from '../runtime/llm.ts';

/**
 * An executor that gives every conversation its own executor from `make` — a file-backed model
 * (`scripted:FILE`, `transcript:FILE`) served to many threads runs its file from the start in each,
 * exactly as `awaken run` does for one. A conversation is known by its first message that is not a
 * system message (a thread's history only grows after it); the oldest conversations are forgotten
 * beyond `capacity`. A conversation first seen with assistant turns in its history (taken up after
 * a restart, or after it was forgotten) goes on from there: `make` is told how many turns it had.
 */
export function perConversation(make: (turnsTaken: number) => LlmExecutor, options: { readonly capacity?: number } = {}): LlmExecutor {
  const capacity = options.capacity ?? 10_000;
  const executors = new Map<string, LlmExecutor>();
  const keyOf = (request: InferenceRequest): string => {
    const first = request.messages.find((m) => m.role !== 'system');
    return first?.id ?? '';
  };
  return {
    name: make(0).name,
    stream(request: InferenceRequest): AsyncIterable<StreamPart> {
      const key = keyOf(request);
      let executor = executors.get(key);
      if (executor === undefined) {
        let turns = 0;
        for (const m of request.messages) if (m.role === 'assistant') turns++;
        executor = make(turns);
        executors.set(key, executor);
        if (executors.size > capacity) executors.delete(executors.keys().next().value as string);
      }
      return executor.stream(request);
    },
  };
}
