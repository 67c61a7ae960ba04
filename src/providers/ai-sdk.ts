import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';
import type { InferenceExecutionError } from '../contract/errors.ts';
import type { JsonValue } from '../contract/json.ts';
import { messageText, type Message } from '../contract/message.ts';
import type { ResponseMetadataPart, ServerAddress, StopReason, StreamPart } from '../contract/stream.ts';
import type { TokenUsage } from '../contract/usage.ts';
import { InferenceFailure, type InferenceRequest, type LlmExecutor } from '../runtime/llm.ts';
import { unreachable } from '../contract/never.ts';

/** Our messages as an AI SDK v3 prompt; tool results name the tool of the call they answer. */
export function toPrompt(messages: readonly Message[]): LanguageModelV3Message[] {
  const toolNames = new Map<string, string>();
  const out: LanguageModelV3Message[] = [];
  for (const m of messages) {
    const text = messageText(m);
    switch (m.role) {
      case 'system':
        out.push({ role: 'system', content: text });
        break;
      case 'user':
        out.push({ role: 'user', content: [{ type: 'text', text }] });
        break;
      case 'assistant': {
        const content: Extract<LanguageModelV3Message, { role: 'assistant' }>['content'] = text === '' ? [] : [{ type: 'text', text }];
        for (const call of m.tool_calls ?? []) {
          toolNames.set(call.id, call.name);
          content.push({ type: 'tool-call', toolCallId: call.id, toolName: call.name, input: call.arguments });
        }
        out.push({ role: 'assistant', content });
        break;
      }
      case 'tool': {
        const id = m.tool_call_id ?? '';
        out.push({
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: id, toolName: toolNames.get(id) ?? '', output: { type: 'text', value: text } }],
        });
        break;
      }
      default:
        unreachable(m.role);
    }
  }
  return out;
}

/** Call options of one inference: prompt, tools (named by id), a forced tool, overrides, the abort signal. */
export function toCallOptions(request: InferenceRequest): LanguageModelV3CallOptions {
  const o = request.overrides;
  return {
    prompt: toPrompt(request.messages),
    ...(request.tools.length > 0
      ? {
          tools: request.tools.map(
            (d): LanguageModelV3FunctionTool => ({
              type: 'function',
              name: d.id,
              description: d.description,
              inputSchema: d.parameters as LanguageModelV3FunctionTool['inputSchema'],
            }),
          ),
        }
      : {}),
    ...(request.requiredTool !== undefined ? { toolChoice: { type: 'tool', toolName: request.requiredTool } } : {}),
    ...(o?.max_tokens !== undefined ? { maxOutputTokens: o.max_tokens } : {}),
    ...(o?.temperature !== undefined ? { temperature: o.temperature } : {}),
    ...(o?.top_p !== undefined ? { topP: o.top_p } : {}),
    ...(request.signal !== undefined ? { abortSignal: request.signal } : {}),
  };
}

/** Usage with every known count, cached and reasoning tokens included; absent counts stay absent. */
export function usageOf(u: LanguageModelV3Usage): TokenUsage {
  const set = (v: number | undefined): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const input = set(u.inputTokens.total);
  const output = set(u.outputTokens.total);
  const entries: [keyof TokenUsage, number | undefined][] = [
    ['prompt_tokens', input],
    ['completion_tokens', output],
    ['total_tokens', input !== undefined || output !== undefined ? (input ?? 0) + (output ?? 0) : undefined],
    ['cache_read_tokens', set(u.inputTokens.cacheRead)],
    ['cache_creation_tokens', set(u.inputTokens.cacheWrite)],
    ['thinking_tokens', set(u.outputTokens.reasoning)],
  ];
  return Object.fromEntries(entries.filter(([, v]) => v !== undefined)) as TokenUsage;
}

/** `length` → MaxTokens, `tool-calls` → ToolUse, a stop sequence → StopSequence, else EndTurn. */
export function stopReasonOf(finish: { unified: string; raw: string | undefined }): StopReason {
  switch (finish.unified) {
    case 'length':
      return 'MaxTokens';
    case 'tool-calls':
      return 'ToolUse';
    default:
      return finish.raw === 'stop_sequence' ? 'StopSequence' : 'EndTurn';
  }
}

/** An HTTP failure as a typed inference error: 429 → rate limited, 408/504 → timeout, else provider. */
export function inferenceErrorOf(e: unknown): InferenceExecutionError {
  if (e instanceof InferenceFailure) return e.error;
  const message = e instanceof Error ? e.message : typeof e === 'string' ? e : JSON.stringify(e);
  if (e instanceof Error && e.name === 'AbortError') return { code: 'cancelled' };
  const status = typeof e === 'object' && e !== null ? (e as { statusCode?: unknown }).statusCode : undefined;
  if (status === 429) return { code: 'rate_limited', message };
  if (status === 408 || status === 504) return { code: 'timeout', message };
  return { code: 'provider', message };
}

/**
 * The provider names of the GenAI semantic conventions (`gen_ai.provider.name`), by the provider
 * family an AI SDK model names itself with (`model.provider`: `openai.chat`, `anthropic.messages`,
 * `google.generative-ai`, `mistral.chat`, …; its part before the first dot, `google.vertex` for
 * Vertex). A family not here has no well-known name: an OpenAI-compatible provider names itself
 * after its settings' `name`, which says nothing of the API it speaks (`AiSdkProviderFacts`).
 */
const PROVIDER_NAMES: Readonly<Record<string, string>> = {
  openai: 'openai',
  azure: 'azure.ai.openai',
  anthropic: 'anthropic',
  google: 'gcp.gemini',
  'google.vertex': 'gcp.vertex_ai',
  mistral: 'mistral_ai',
  groq: 'groq',
  deepseek: 'deepseek',
  xai: 'x_ai',
  cohere: 'cohere',
  perplexity: 'perplexity',
  'amazon-bedrock': 'aws.bedrock',
};

/** The conventions' name of an AI SDK model's provider family (`model.provider`), if it has one. */
export function providerNameOf(modelProvider: string): string | undefined {
  const parts = modelProvider.split('.');
  const two = parts.slice(0, 2).join('.');
  return PROVIDER_NAMES[two] ?? PROVIDER_NAMES[parts[0] as string];
}

/** The host and port of a base URL (the scheme's default port when it names none); `undefined` for no URL or one that does not parse. */
export function serverOf(baseURL: string | undefined): ServerAddress | undefined {
  if (baseURL === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(baseURL);
  } catch {
    return undefined;
  }
  const address = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (address === '') return undefined;
  const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : url.protocol === 'http:' ? 80 : undefined;
  return port === undefined ? { address } : { address, port };
}

/**
 * What an AI SDK model does not say of itself: the provider's name in the GenAI semantic conventions,
 * when its family (`model.provider`) does not give it (an OpenAI-compatible server: `openai`, the
 * API it speaks), and the base URL it is reached at (an AI SDK model keeps its URL to itself).
 */
export interface AiSdkProviderFacts {
  readonly providerName?: string;
  readonly baseURL?: string;
}

/** The adapter's own `response_metadata` facts: the provider's name and where it is reached. */
function providerFactsOf(model: LanguageModelV3, facts: AiSdkProviderFacts): Omit<ResponseMetadataPart, 'type' | 'id' | 'model'> {
  const name = facts.providerName ?? providerNameOf(model.provider);
  const server = serverOf(facts.baseURL);
  return { ...(name !== undefined ? { provider_name: name } : {}), ...(server !== undefined ? { server } : {}) };
}

/** A `response_metadata` part of the provider's facts and what its `response-metadata` said (its id and model). */
function metadataPart(
  own: Omit<ResponseMetadataPart, 'type' | 'id' | 'model'>,
  response: { readonly id?: string | undefined; readonly modelId?: string | undefined } | undefined,
): ResponseMetadataPart {
  return {
    type: 'response_metadata',
    ...(response?.id !== undefined ? { id: response.id } : {}),
    ...(response?.modelId !== undefined ? { model: response.modelId } : {}),
    ...own,
  };
}

/**
 * An `LlmExecutor` over any AI SDK `LanguageModel` (specification v3, the line `ai@6` uses), so every
 * AI SDK provider package serves the loop. Its stream parts map onto ours: text and reasoning
 * deltas, tool input start/delta and the final tool call, usage, and the finish reason — `length`
 * with a tool call still open flags `has_incomplete_tool_calls`. What the provider says of its answer
 * (`response-metadata`: its id and model) becomes one `response_metadata` part, with the provider's
 * name and where it was reached (`facts`), sent just before the first part with content; a stream
 * that said nothing of its answer still gets one before its finish, when there is a fact to tell.
 */
export function aiSdkExecutor(model: LanguageModelV3, facts: AiSdkProviderFacts = {}): LlmExecutor {
  const own = providerFactsOf(model, facts);
  return {
    name: `ai-sdk:${model.provider}`,
    stream: (request) =>
      (async function* (): AsyncGenerator<StreamPart> {
        let stream: ReadableStream<LanguageModelV3StreamPart>;
        try {
          stream = (await model.doStream(toCallOptions(request))).stream;
        } catch (e) {
          throw new InferenceFailure(inferenceErrorOf(e));
        }
        const started = new Set<string>();
        const completed = new Set<string>();
        // What the provider said of its answer, held until the first part that carries content: a
        // failure before it stays one the retry policy may retry (nothing has reached the client).
        let held: ResponseMetadataPart | undefined;
        const release = (): ResponseMetadataPart => {
          const part = held as ResponseMetadataPart;
          held = undefined;
          return part;
        };
        let described = false;
        const reader = stream.getReader();
        try {
          for (;;) {
            const { done, value: part } = await reader.read();
            if (done) break;
            switch (part.type) {
              case 'text-delta':
                if (part.delta === '') break;
                if (held !== undefined) yield release();
                yield { type: 'text_delta', delta: part.delta };
                break;
              case 'reasoning-delta':
                if (part.delta === '') break;
                if (held !== undefined) yield release();
                yield { type: 'reasoning_delta', delta: part.delta };
                break;
              case 'tool-input-start':
                started.add(part.id);
                if (held !== undefined) yield release();
                yield { type: 'tool_call_start', id: part.id, name: part.toolName };
                break;
              case 'tool-input-delta':
                if (part.delta === '') break;
                if (held !== undefined) yield release();
                yield { type: 'tool_call_delta', id: part.id, args_delta: part.delta };
                break;
              case 'tool-call': {
                if (part.providerExecuted === true) break;
                if (!started.has(part.toolCallId)) {
                  started.add(part.toolCallId);
                  if (held !== undefined) yield release();
                  yield { type: 'tool_call_start', id: part.toolCallId, name: part.toolName };
                  if (part.input !== '') yield { type: 'tool_call_delta', id: part.toolCallId, args_delta: part.input };
                }
                let args: JsonValue | undefined;
                try {
                  args = part.input.trim() === '' ? {} : (JSON.parse(part.input) as JsonValue);
                } catch {
                  args = undefined;
                }
                if (args !== undefined) {
                  completed.add(part.toolCallId);
                  if (held !== undefined) yield release();
                  yield { type: 'tool_call_ready', id: part.toolCallId, name: part.toolName, arguments: args };
                }
                break;
              }
              case 'response-metadata':
                described = true;
                held = metadataPart(own, part);
                break;
              case 'finish': {
                if (held !== undefined) yield release();
                else if (!described && Object.keys(own).length > 0) yield metadataPart(own, undefined);
                described = true;
                yield { type: 'usage', usage: usageOf(part.usage) };
                const stop = stopReasonOf(part.finishReason);
                const open = [...started].some((id) => !completed.has(id));
                yield { type: 'finish', stop_reason: stop, ...(open ? { has_incomplete_tool_calls: true } : {}) };
                break;
              }
              case 'error':
                throw new InferenceFailure(inferenceErrorOf(part.error));
              case 'file':
              case 'source':
              case 'text-end':
              case 'text-start':
              case 'reasoning-start':
              case 'reasoning-end':
              case 'tool-input-end':
              case 'tool-approval-request':
              case 'tool-result':
              case 'stream-start':
              case 'raw':
                break;
              default: {
                // A part of a provider package newer than these types: ignored, as the parts above
                // are; the binding still makes a part added to the types a compile error here.
                const unknown: never = part;
                void unknown;
                break;
              }
            }
          }
        } catch (e) {
          throw e instanceof InferenceFailure ? e : new InferenceFailure(inferenceErrorOf(e));
        } finally {
          reader.releaseLock();
        }
      })(),
  };
}
