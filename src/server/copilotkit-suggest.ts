import type { Context } from 'hono';
import { z } from 'zod';
import type { AgentEvent } from '../contract/event.ts';
import { JsonValueSchema, type JsonValue } from '../contract/json.ts';
import { Messages, type Message, type ToolCall } from '../contract/message.ts';
import { unreachable } from '../contract/never.ts';
import type { StreamPart } from '../contract/stream.ts';
import type { ToolDescriptor } from '../contract/tool.ts';
import { AG_UI_STREAM_HEADERS, frameAgUi, requestAgUiState, transcodeAgUi, type AgUiState } from '../protocols/ag-ui/encoder.ts';
import { RunAgentInputSchema } from '../protocols/ag-ui/request.ts';
import { clientContextMessage } from '../runtime/client-state.ts';
import { describeInferenceError } from '../runtime/errors.ts';
import { InferenceFailure, type InferenceRequest } from '../runtime/llm.ts';
import { HttpError, readJson, type ServerParts } from './http-support.ts';

/** The tool CopilotKit's suggestion engine offers and reads its suggestions from (`{suggestions: [{title, message}]}`). */
export const SUGGEST_TOOL = 'copilotkitSuggest';

/** What a suggest request reads of its messages beyond `RunAgentInput`'s checks: an assistant's tool calls. */
const AssistantCallsSchema = z.looseObject({
  toolCalls: z.array(z.looseObject({ id: z.string(), function: z.looseObject({ name: z.string(), arguments: z.string() }) })).optional(),
});

/**
 * CopilotKit's stateless suggestions (`POST /agent/:id/suggest`): the page sends its conversation,
 * the instruction as a last user message and `copilotkitSuggest` as its only tool, and reads the
 * suggestions from that call's arguments as they stream. Asked of the agent's model once — its
 * system prompt, the page's context, the conversation, that tool alone — and answered as AG-UI events
 * under the client's thread and run ids. It is not a run: nothing is stored, no plugin, retry or
 * context policy of the agent takes part, and no tool runs (a call the model makes is only shown).
 * The client's `forwardedProps.toolChoice` forces the call: the model must call that tool (every
 * provider that runs through the AI SDK is told so; a scripted model answers as written).
 */
/** The tool `forwardedProps.toolChoice` forces (`{type: "function", function: {name}}`, as CopilotKit writes it), if any. */
function forced(props: unknown): string | undefined {
  const choice = ForcedChoiceSchema.safeParse(props);
  return choice.success ? choice.data.toolChoice.function.name : undefined;
}

const ForcedChoiceSchema = z.looseObject({ toolChoice: z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string() }) }) });

export async function serveSuggest(c: Context, parts: ServerParts, agentId: string): Promise<Response> {
  const parsed = RunAgentInputSchema.safeParse(await readJson(c));
  if (!parsed.success) {
    const [first] = parsed.error.issues;
    const field = first?.path.map(String).join('.') || '(body)';
    throw new HttpError(400, 'invalid_request', `${field}: ${first?.message ?? 'invalid'}`, field);
  }
  const input = parsed.data;
  const declared = (input.tools ?? []).find((t) => t.name === SUGGEST_TOOL);
  if (declared === undefined)
    throw new HttpError(400, 'invalid_request', `tools: a suggest request offers ${SUGGEST_TOOL}, the tool its answer is read from`, 'tools');
  const spec = parts.runtime.registries.agents.get(agentId);
  if (spec === undefined || spec.endpoint !== undefined) throw new HttpError(404, 'agent_not_found', `agent not found: ${agentId}`, 'agent_id');
  const model = parts.runtime.registries.models.get(spec.model);
  const executor = model === undefined ? undefined : parts.runtime.registries.providers.get(model.provider);
  if (model === undefined || executor === undefined)
    throw new HttpError(503, 'model_unavailable', `agent '${agentId}': its model '${spec.model}' is not served`, 'agent_id');

  const tool: ToolDescriptor = {
    id: SUGGEST_TOOL,
    name: SUGGEST_TOOL,
    description: declared.description ?? '',
    parameters: jsonOf(declared.parameters) ?? { type: 'object', properties: {} },
  };
  const context = input.context ?? [];
  const messages: Message[] = [
    ...(spec.system_prompt !== '' ? [Messages.system(spec.system_prompt)] : []),
    ...(context.length > 0 ? [Messages.system(clientContextMessage(context).content)] : []),
    ...conversationOf(input.messages),
  ];
  const abort = new AbortController();
  c.req.raw.signal.addEventListener('abort', () => abort.abort(), { once: true });
  const request: InferenceRequest = {
    model: model.model_name,
    messages,
    tools: [tool],
    ...(forced(input.forwardedProps) === SUGGEST_TOOL ? { requiredTool: SUGGEST_TOOL } : {}),
    signal: abort.signal,
    ...(spec.reasoning_effort !== undefined ? { overrides: { reasoning_effort: spec.reasoning_effort } } : {}),
  };

  const encoder = new TextEncoder();
  let state: AgUiState = requestAgUiState({ clientRunId: input.runId, shared: [] });
  const frames = (event: AgentEvent): Uint8Array => {
    const [next, out] = transcodeAgUi(state, event);
    state = next;
    return encoder.encode(frameAgUi(out));
  };
  // The answer's own message id (the client's run id names its request, not a message).
  const runId = parts.runtime.env.ids.next('run');
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(frames({ event_type: 'run_start', thread_id: input.threadId, run_id: runId }));
      try {
        for await (const part of executor.stream(request)) {
          const event = eventOf(part);
          if (event !== undefined) controller.enqueue(frames(event));
        }
        controller.enqueue(frames({ event_type: 'run_finish', thread_id: input.threadId, run_id: runId, termination: { type: 'natural_end' } }));
      } catch (e) {
        const failure = e instanceof InferenceFailure ? e.error : undefined;
        const message = failure !== undefined ? describeInferenceError(failure) : e instanceof Error ? e.message : String(e);
        controller.enqueue(frames({ event_type: 'error', message, ...(failure !== undefined ? { code: failure.code } : {}) }));
      }
      controller.close();
    },
    cancel() {
      abort.abort();
    },
  });
  return new Response(body, { headers: { ...AG_UI_STREAM_HEADERS } });
}

/** What of a streamed part the page is shown: text, reasoning and tool calls; the rest is the model's bookkeeping. */
function eventOf(part: StreamPart): AgentEvent | undefined {
  switch (part.type) {
    case 'text_delta':
      return { event_type: 'text_delta', delta: part.delta };
    case 'reasoning_delta':
      return { event_type: 'reasoning_delta', delta: part.delta };
    case 'tool_call_start':
      return { event_type: 'tool_call_start', id: part.id, name: part.name };
    case 'tool_call_delta':
      return { event_type: 'tool_call_delta', id: part.id, args_delta: part.args_delta };
    case 'tool_call_ready':
      return { event_type: 'tool_call_ready', id: part.id, name: part.name, arguments: part.arguments };
    case 'reasoning_encrypted':
    case 'usage':
    case 'finish':
    case 'response_metadata':
      return undefined;
    default:
      return unreachable(part);
  }
}

const jsonOf = (v: unknown): JsonValue | undefined => {
  const r = JsonValueSchema.safeParse(v);
  return r.success && v !== null && v !== undefined ? r.data : undefined;
};

/** A message's text: a string, or the text parts of a list of parts (what else a page attaches is not read here). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((p) => (typeof p === 'object' && p !== null && (p as { type?: unknown }).type === 'text' ? String((p as { text?: unknown }).text ?? '') : ''))
    .join('');
}

/**
 * The page's conversation as the model reads it: user, system (and developer) messages, the
 * assistant's text and tool calls, the tools' results. A call without a result in the conversation,
 * and a result without its call, are left out: a provider refuses either.
 */
function conversationOf(messages: z.output<typeof RunAgentInputSchema>['messages']): Message[] {
  const answered = new Set(messages.flatMap((m) => (m.role === 'tool' && m.toolCallId !== undefined ? [m.toolCallId] : [])));
  const made = new Set<string>();
  const out: Message[] = [];
  for (const m of messages) {
    const text = textOf(m.content);
    switch (m.role) {
      case 'user':
        if (text !== '') out.push(Messages.user(text, { id: m.id }));
        break;
      case 'system':
      case 'developer':
        if (text !== '') out.push(Messages.system(text, { id: m.id }));
        break;
      case 'assistant': {
        const calls: ToolCall[] = [];
        for (const call of AssistantCallsSchema.safeParse(m).data?.toolCalls ?? []) {
          if (!answered.has(call.id)) continue;
          made.add(call.id);
          calls.push({ id: call.id, name: call.function.name, arguments: parsedArguments(call.function.arguments) });
        }
        if (text !== '' || calls.length > 0) out.push(Messages.assistantWithToolCalls(text, calls, { id: m.id }));
        break;
      }
      case 'tool':
        if (m.toolCallId !== undefined && made.has(m.toolCallId)) out.push(Messages.tool(m.toolCallId, text, { id: m.id }));
        break;
      case 'activity':
      case 'reasoning':
        break;
      default:
        return unreachable(m.role);
    }
  }
  return out;
}

/** A call's arguments as the page holds them (JSON text); text that is not a JSON object is kept as `{}`. */
function parsedArguments(text: string): JsonValue {
  try {
    const value = JsonValueSchema.safeParse(JSON.parse(text));
    return value.success && typeof value.data === 'object' && value.data !== null && !Array.isArray(value.data) ? value.data : {};
  } catch {
    return {};
  }
}
