import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { InferenceExecutionErrorSchema, type InferenceExecutionError } from '../contract/errors.ts';
import { bracketPath, fieldIssues } from '../contract/issue-line.ts';
import { JsonValueSchema, type JsonValue } from '../contract/json.ts';
import { StopReasonSchema, type StreamPart } from '../contract/stream.ts';
import { TokenUsageSchema, type TokenUsage } from '../contract/usage.ts';
import { InferenceFailure, type InferenceRequest, type LlmExecutor } from '../runtime/llm.ts';

const TextsSchema = z.union([z.string(), z.array(z.string())], { error: 'Invalid input: expected string or list of strings' });

/**
 * One scripted model turn (docs/scripted-models.md): optional text (one delta, or a list of
 * deltas), reasoning, tool calls, usage, stop reason, or an error instead of a response.
 */
export const ScriptStepSchema = z
  .object({
    text: TextsSchema.optional(),
    reasoning: TextsSchema.optional(),
    encrypted_reasoning: z.string().optional(),
    tool_calls: z.array(z.object({ id: z.string().min(1), name: z.string().min(1), arguments: JsonValueSchema.default({}) }).strict()).optional(),
    /** A tool call cut off mid-arguments (its raw argument text is not valid JSON), streamed last. */
    partial_tool_call: z
      .object({ id: z.string().min(1), name: z.string().min(1), arguments_text: z.string() })
      .strict()
      .optional(),
    usage: TokenUsageSchema.optional(),
    stop_reason: StopReasonSchema.optional(),
    error: z.union([z.string(), InferenceExecutionErrorSchema]).optional(),
    /** Milliseconds to wait before each part: a slow model, a long stream, a run to cancel mid-way. */
    delay_ms: z.number().int().min(0).max(60_000).optional(),
  })
  .strict();
export type ScriptStep = z.input<typeof ScriptStepSchema>;

/**
 * Parses a script file (JSON or YAML: a list of steps, or `{steps: [...]}`). A script that does not
 * parse throws an error of one line naming each field at fault: `[0].colour: unknown field`,
 * `steps[1].tool_calls[0].id: …`.
 */
export function parseScript(text: string, format: 'json' | 'yaml' = 'yaml'): z.output<typeof ScriptStepSchema>[] {
  const data: unknown = format === 'json' ? JSON.parse(text) : parseYaml(text);
  const wrapped = typeof data === 'object' && data !== null && !Array.isArray(data) && Object.keys(data).length === 1 && 'steps' in data;
  const list = Array.isArray(data) ? data : wrapped ? (data as { steps: unknown }).steps : undefined;
  if (!Array.isArray(list)) throw new Error('a list of steps, or {steps: [...]}');
  const parsed = z.array(ScriptStepSchema).safeParse(list);
  if (parsed.success) return parsed.data;
  throw new Error(
    fieldIssues(parsed.error)
      .map((i) => `${wrapped ? 'steps' : ''}${bracketPath(i.path)}: ${i.message}`)
      .join('; '),
  );
}

const asList = (x: string | readonly string[] | undefined): readonly string[] => (x === undefined ? [] : typeof x === 'string' ? [x] : x);

/** The parts one step streams, in order: reasoning, text, tool calls (start + args), usage, finish. */
export function stepParts(step: z.output<typeof ScriptStepSchema>): StreamPart[] {
  const parts: StreamPart[] = [];
  for (const delta of asList(step.reasoning)) parts.push({ type: 'reasoning_delta', delta });
  if (step.encrypted_reasoning !== undefined) parts.push({ type: 'reasoning_encrypted', value: step.encrypted_reasoning });
  for (const delta of asList(step.text)) parts.push({ type: 'text_delta', delta });
  for (const call of step.tool_calls ?? []) {
    parts.push({ type: 'tool_call_start', id: call.id, name: call.name });
    parts.push({ type: 'tool_call_delta', id: call.id, args_delta: JSON.stringify(call.arguments as JsonValue) });
  }
  const partial = step.partial_tool_call;
  if (partial !== undefined) {
    parts.push({ type: 'tool_call_start', id: partial.id, name: partial.name });
    parts.push({ type: 'tool_call_delta', id: partial.id, args_delta: partial.arguments_text });
  }
  if (step.usage !== undefined) parts.push({ type: 'usage', usage: step.usage as TokenUsage });
  const finish: Extract<StreamPart, { type: 'finish' }> = {
    type: 'finish',
    stop_reason: step.stop_reason ?? ((step.tool_calls ?? []).length > 0 ? 'ToolUse' : 'EndTurn'),
  };
  parts.push(finish);
  return parts;
}

/** Waits `ms`, or less when the signal aborts first. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

function failureOf(error: string | InferenceExecutionError): InferenceFailure {
  return new InferenceFailure(typeof error === 'string' ? { code: 'provider', message: error } : error);
}

/**
 * A scripted `LlmExecutor` (book: 测试策略 → ScriptedLlm): each inference consumes the next step;
 * when the script is exhausted it answers "Done." (as the book's example does). Every request is
 * recorded in `requests`, unless `record: false` (a model serving for long: each request holds its
 * thread's history).
 */
export class ScriptedLlm implements LlmExecutor {
  readonly name = 'scripted';
  readonly requests: InferenceRequest[] = [];
  readonly #steps: z.output<typeof ScriptStepSchema>[];
  readonly #fallback: string;
  readonly #record: boolean;

  constructor(steps: readonly ScriptStep[], options: { readonly fallbackText?: string; readonly record?: boolean } = {}) {
    this.#steps = steps.map((s) => ScriptStepSchema.parse(s));
    this.#fallback = options.fallbackText ?? 'Done.';
    this.#record = options.record ?? true;
  }

  get remaining(): number {
    return this.#steps.length;
  }

  stream(request: InferenceRequest): AsyncIterable<StreamPart> {
    // Kept past the stream: the messages are copied (the loop appends to the array it sent).
    if (this.#record) this.requests.push({ ...request, messages: [...request.messages], ...(request.signal !== undefined ? { signal: request.signal } : {}) });
    const step = this.#steps.shift() ?? { text: this.#fallback };
    const delay = step.delay_ms ?? 0;
    return (async function* () {
      if (step.error !== undefined) throw failureOf(step.error);
      for (const part of stepParts(step)) {
        if (delay > 0) await pause(delay, request.signal);
        if (request.signal?.aborted === true) throw new InferenceFailure({ code: 'cancelled' });
        yield part;
      }
    })();
  }
}

/** A text-only scripted model (book: MockLlmExecutor). */
export class MockLlmExecutor extends ScriptedLlm {
  constructor(responses: readonly string[] = []) {
    super(responses.map((text) => ({ text })));
  }
}
