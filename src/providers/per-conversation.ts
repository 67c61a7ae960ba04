import type { StreamPart } from '../contract/stream.ts';
import type { InferenceRequest, LlmExecutor } from '../runtime/llm.ts';

/**
 * An executor that gives every conversation its own executor from `make` — a file-backed model
 * (`scripted:FILE`, `transcript:FILE`) served to many threads runs its file from the start in each,
 * exactly as `awaken run` does for one. A conversation is known by its first message that is not a
 * system message (a thread's history only grows after it); the oldest conversations are forgotten
 * beyond `capacity`.
 */
export function perConversation(make: () => LlmExecutor, options: { readonly capacity?: number } = {}): LlmExecutor {
  const capacity = options.capacity ?? 10_000;
  const executors = new Map<string, LlmExecutor>();
  const keyOf = (request: InferenceRequest): string => {
    const first = request.messages.find((m) => m.role !== 'system');
    return first?.id ?? '';
  };
  return {
    name: make().name,
    stream(request: InferenceRequest): AsyncIterable<StreamPart> {
      const key = keyOf(request);
      let executor = executors.get(key);
      if (executor === undefined) {
        executor = make();
        executors.set(key, executor);
        if (executors.size > capacity) executors.delete(executors.keys().next().value as string);
      }
      return executor.stream(request);
    },
  };
}
