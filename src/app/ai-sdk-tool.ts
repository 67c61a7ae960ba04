import { z } from 'zod';
import type { JsonValue } from '../contract/json.ts';
import { SuspendTicketSchema, ToolResults, type ToolResult } from '../contract/tool.ts';
import { permissionTicket } from '../plugins/permission.ts';
import { andThen, andThenOrElse, requireNow } from '../runtime/maybe-promise.ts';
import { clientTool } from '../runtime/client-tool.ts';
import { ToolFailure, type Tool, type ToolCallContext } from '../runtime/tool.ts';
import type { AiSdkToolLike } from './define.ts';

/**
 * A tool written with the AI SDK's `tool()` (ai@6, ai@7), run as an awaken tool. The `ai` package
 * is an optional peer dependency and the root entry re-exports this module, so nothing here imports
 * it: the tool is read by its shape (`inputSchema`, `execute`, `needsApproval`, `toModelOutput`).
 *
 * An approval is asked the way the permission plugin asks (the same ticket, the same events), so a
 * client that answers awaken's approvals answers these too, and where it does: at the batch's gate,
 * before the call runs (`Tool.askBefore`), so in a `sequential` batch the calls after one waiting
 * for approval still run. The call asks again from inside itself only if nothing asked at the gate
 * (a wrapper that dropped `askBefore`): a call that needs approval never runs without one.
 */

/** A tool's input checked: the parsed value, or why it is not one (the fields at fault). */
type Checked = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly message: string };

interface InputSchema {
  /** The JSON Schema the model is shown. */
  readonly parameters: JsonValue;
  readonly check: (value: unknown) => Checked | PromiseLike<Checked>;
}

/** What `toModelOutput` may return (the AI SDK's `ToolResultOutput`, the fields read here). */
type ModelOutput =
  | { readonly type: 'text'; readonly value: string }
  | { readonly type: 'json'; readonly value: unknown }
  | { readonly type: 'error-text'; readonly value: string }
  | { readonly type: 'error-json'; readonly value: unknown }
  | { readonly type: 'execution-denied'; readonly reason?: string }
  | { readonly type: 'content'; readonly value: readonly { readonly type: string; readonly text?: string }[] };

type Issue = { readonly message: string; readonly path?: readonly (PropertyKey | { readonly key: PropertyKey })[] };

/** How the AI SDK marks a `jsonSchema()` (a global symbol: the same in every copy of the package). */
const AI_SDK_SCHEMA = Symbol.for('vercel.ai.schema');

/** Whether `x` is an AI SDK tool: an object with an `inputSchema` and no awaken descriptor. */
export const isAiSdkTool = (x: unknown): x is AiSdkToolLike => typeof x === 'object' && x !== null && 'inputSchema' in x && !('descriptor' in x);

/**
 * The awaken tool `id` that runs the AI SDK tool `t`. Throws an Error whose message names the field
 * it cannot take (the caller says which file and tool): no `execute`, an `inputSchema` it cannot
 * read, a description made by a function.
 */
export function aiSdkTool(id: string, t: AiSdkToolLike): Tool {
  const run = t.execute as ((input: unknown, options: object) => unknown) | undefined;
  const kind: unknown = (t as { readonly type?: unknown }).type;
  // A provider's own tool (a web search the model's provider runs) has no execute either, but no client runs it.
  if (kind === 'provider' || kind === 'provider-defined')
    throw new Error("type: a provider's own tool (its provider runs it) is not supported: give a tool with execute, or one the client runs");
  const description: unknown = t.description;
  // ai@7 lets a description be made from the call's context, which awaken has no counterpart of.
  if (description !== undefined && typeof description !== 'string')
    throw new Error('description: a description made by a function is not supported (give a string)');
  const schema = schemaOf(t.inputSchema);
  // A validator that answers now fails the call here; an asynchronous one answers in `execute`,
  // which checks the arguments again, so what it says later is let go (a rejection included).
  const validateArgs = (args: JsonValue): void => void andThenOrElse(andThen(schema.check(args), throwUnlessValid), letGo, letGo);
  // Without `execute` the client runs it (`useChat`'s `onToolCall` + `addToolOutput`): the call waits for its output.
  if (typeof run !== 'function') {
    if (t.needsApproval !== undefined && t.needsApproval !== false)
      throw new Error('needsApproval: a tool the client runs (no execute) asks its user itself; the server asks nothing of it');
    const client = clientTool({ id, name: id, description: description ?? '', parameters: schema.parameters });
    return { ...client, validateArgs };
  }
  const needsApproval = t.needsApproval as boolean | ((input: unknown, options: object) => unknown) | undefined;
  const toModelOutput = t.toModelOutput as ((options: object) => unknown) | undefined;

  const parse = async (args: JsonValue): Promise<unknown> => {
    const checked = await schema.check(args);
    if (!checked.ok) throw new ToolFailure({ code: 'invalid_arguments', message: checked.message });
    return checked.value;
  };

  const approvalNeeded = async (input: unknown, callId: string): Promise<boolean> => {
    if (typeof needsApproval !== 'function') return needsApproval === true;
    return Boolean(await needsApproval(input, { toolCallId: callId, messages: [] }));
  };
  const ticketOf = (callId: string, name: string, args: JsonValue) => SuspendTicketSchema.parse(permissionTicket({ id: callId, name, arguments: args }));
  /** Calls asked at the gate and let run: not asked again inside (one question per call). */
  const cleared = new Set<string>();

  return {
    descriptor: { id, name: id, description: description ?? '', parameters: schema.parameters },
    ...(needsApproval === undefined || needsApproval === false
      ? {}
      : {
          askBefore: async (args: JsonValue, call: { readonly id: string; readonly name: string }) => {
            const checked = await schema.check(args);
            // Arguments that do not parse fail in `execute`, which says why; nothing to approve.
            if (!checked.ok) return undefined;
            if (await approvalNeeded(checked.value, call.id)) return ticketOf(call.id, call.name, args);
            cleared.add(call.id);
            // A call let run but never run (interrupted, cancelled) stays here: the oldest go first.
            if (cleared.size > 1024) cleared.delete(cleared.values().next().value as string);
            return undefined;
          },
        }),
    validateArgs,
    execute: async (args, ctx) => {
      const input = await parse(args);
      // A resumed call was approved (a denial cancels it without running the tool); one the gate let
      // run was not to be asked. Anything else — the gate never asked — asks here.
      const asked = cleared.delete(ctx.callId);
      if (ctx.resume === undefined && !asked && (await approvalNeeded(input, ctx.callId))) {
        return ToolResults.suspended(ctx.toolName, `Tool '${ctx.toolName}' suspended: awaiting approval`, ticketOf(ctx.callId, ctx.toolName, args));
      }
      const output = await outputOf(run, input, ctx);
      const data = jsonOf(output);
      if (toModelOutput === undefined) return ToolResults.success(ctx.toolName, data);
      return modelResult(ctx.toolName, data, (await toModelOutput({ toolCallId: ctx.callId, input, output })) as ModelOutput);
    },
  };
}

/**
 * Runs `execute`. An async iterable (an `async function*`) streams each value but the last as the
 * call's output so far (`tool_call_stream_delta`, which the AI SDK encoder sends as preliminary
 * output), one JSON text a line; the last value is the output. A throw fails the call.
 */
async function outputOf(run: (input: unknown, options: object) => unknown, input: unknown, ctx: ToolCallContext): Promise<unknown> {
  try {
    const out = run(input, { toolCallId: ctx.callId, messages: [], abortSignal: ctx.signal });
    if (!isAsyncIterable(out)) return await out;
    // Each value is held until the next one comes: only then is it known not to be the last.
    let held = false;
    let last: unknown;
    for await (const value of out) {
      if (held) await ctx.streamOutput(`${JSON.stringify(jsonOf(last))}\n`);
      last = value;
      held = true;
    }
    return last;
  } catch (e) {
    if (e instanceof ToolFailure) throw e;
    throw new ToolFailure({ code: 'execution_failed', message: e instanceof Error ? e.message : String(e) });
  }
}

const isAsyncIterable = (x: unknown): x is AsyncIterable<unknown> =>
  typeof x === 'object' && x !== null && typeof (x as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function';

/** An output as the JSON a result carries (as the AI SDK sends it: through JSON; nothing → null). */
function jsonOf(output: unknown): JsonValue {
  if (output === undefined) return null;
  try {
    const text = JSON.stringify(output);
    return text === undefined ? null : (JSON.parse(text) as JsonValue);
  } catch (e) {
    throw new ToolFailure({ code: 'execution_failed', message: `the output is not JSON: ${e instanceof Error ? e.message : String(e)}` });
  }
}

const jsonText = (value: unknown): string => JSON.stringify(value) ?? 'null';

/** Arguments a validator refused fail the call, with what it said. */
function throwUnlessValid(checked: Checked): void {
  if (!checked.ok) throw new ToolFailure({ code: 'invalid_arguments', message: checked.message });
}

const letGo = (): void => undefined;

/** The result of a call whose output `toModelOutput` turned into `out`: the model reads `out`, the client gets `data`. */
function modelResult(name: string, data: JsonValue, out: ModelOutput): ToolResult {
  const failed = (message: string): ToolResult => ({ tool_name: name, status: 'error', data, message });
  switch (out.type) {
    case 'text':
      return ToolResults.successWithMessage(name, data, String(out.value));
    case 'json':
      return ToolResults.successWithMessage(name, data, jsonText(out.value));
    case 'error-text':
      return failed(String(out.value));
    case 'error-json':
      return failed(jsonText(out.value));
    case 'execution-denied':
      return failed(out.reason !== undefined ? `Tool execution denied: ${out.reason}` : 'Tool execution denied');
    case 'content':
      // A tool message is text: media parts have no place in it.
      return ToolResults.successWithMessage(name, data, out.value.flatMap((p) => (p.type === 'text' && typeof p.text === 'string' ? [p.text] : [])).join('\n'));
    default:
      return unknownOutput(out);
  }
}

function unknownOutput(out: never): never {
  const type = (out as { type?: unknown } | null)?.type;
  throw new ToolFailure({
    code: 'execution_failed',
    message: `toModelOutput returned an output of type '${String(type)}', which is not one a model can be sent`,
  });
}

// ---- input schemas ------------------------------------------------------------------------------

/** The schema an `inputSchema` is: a `jsonSchema()`, a Standard Schema (zod 4), or a lazy one of them. */
function schemaOf(s: unknown): InputSchema {
  if ((typeof s === 'object' || typeof s === 'function') && s !== null) {
    const o = s as Record<PropertyKey, unknown>;
    if (o[AI_SDK_SCHEMA] === true) return jsonSchemaOf(o);
    if ('~standard' in o) return standardSchemaOf(o);
    // `lazySchema(() => jsonSchema(…))`: the AI SDK calls it when it needs the schema.
    if (typeof s === 'function') return schemaOf((s as () => unknown)());
  }
  throw new Error('inputSchema: not a zod schema, a Standard Schema or jsonSchema()');
}

/** `jsonSchema(schema, {validate})`: the JSON Schema as given; its `validate` when it has one (else any input passes, as in the AI SDK). */
function jsonSchemaOf(o: Record<PropertyKey, unknown>): InputSchema {
  const parameters = requireNow(o['jsonSchema'], 'inputSchema: a JSON Schema given as a promise is not supported');
  const validate = o['validate'];
  if (typeof validate !== 'function') return { parameters: parameters as JsonValue, check: (value) => ({ ok: true, value }) };
  type Validation = { readonly success: boolean; readonly value?: unknown; readonly error?: unknown };
  const checked = (r: Validation): Checked => (r.success ? { ok: true, value: r.value } : { ok: false, message: messageOf(r.error) });
  return {
    parameters: parameters as JsonValue,
    check: (value) => {
      return andThen((validate as (v: unknown) => Validation | PromiseLike<Validation>).call(o, value), checked);
    },
  };
}

/** A Standard Schema: validated by `~standard.validate`; its JSON Schema by zod's converter (a zod 4 schema) or its own. */
function standardSchemaOf(o: Record<PropertyKey, unknown>): InputSchema {
  const standard = o['~standard'] as {
    readonly vendor?: unknown;
    readonly validate: (v: unknown) => unknown;
    readonly jsonSchema?: { readonly input?: unknown };
  };
  let parameters: JsonValue;
  if ('_zod' in o) parameters = z.toJSONSchema(o as unknown as z.ZodType, { io: 'input', unrepresentable: 'any' }) as JsonValue;
  else if (typeof standard.jsonSchema?.input === 'function') parameters = (standard.jsonSchema.input as (o: object) => JsonValue)({ target: 'draft-2020-12' });
  else
    throw new Error(
      `inputSchema: a ${String(standard.vendor)} schema with no JSON Schema of its own is not supported (use zod 4 or the AI SDK's jsonSchema())`,
    );
  type Outcome = { readonly value?: unknown; readonly issues?: readonly Issue[] };
  const checked = (r: Outcome): Checked => (r.issues !== undefined ? { ok: false, message: issuesText(r.issues) } : { ok: true, value: r.value });
  return {
    parameters,
    check: (value) => {
      return andThen(standard.validate(value) as Outcome | PromiseLike<Outcome>, checked);
    },
  };
}

/** `field.path: message; …`, as `defineTool` words a failed parse. */
function issuesText(issues: readonly Issue[]): string {
  return issues
    .map((i) => `${(i.path ?? []).map((k) => String(typeof k === 'object' && k !== null ? k.key : k)).join('.') || '(root)'}: ${i.message}`)
    .join('; ');
}

/** A validator's error: its issues when it lists them (a ZodError, the AI SDK's TypeValidationError), else its message. */
function messageOf(error: unknown): string {
  const e = error as { readonly issues?: unknown; readonly cause?: unknown } | null | undefined;
  const issues = Array.isArray(e?.issues) ? e.issues : Array.isArray(e?.cause) ? e.cause : undefined;
  if (issues?.every((i) => typeof (i as Issue | null)?.message === 'string')) return issuesText(issues as Issue[]);
  return error instanceof Error ? error.message : String(error);
}
