// Over 500 lines: the transcript format is one schema — header, records and the rules that tie them —
// kept whole so that a change to the format is seen at once, with its version.
import type { ClientInputs } from '../runtime/run-handle.ts';
import { isAppendOnly } from '../runtime/append-only.ts';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { AgentSpecSchema, type AgentSpec } from '../contract/agent-spec.ts';
import { InferenceExecutionErrorSchema, ToolErrorSchema } from '../contract/errors.ts';
import { InferenceOverrideSchema } from '../contract/inference.ts';
import { isJsonValue, JsonValueSchema, type JsonValue } from '../contract/json.ts';
import { TerminationReasonSchema, type TerminationReason } from '../contract/lifecycle.ts';
import { MessageSchema, type Message } from '../contract/message.ts';
import { TokenUsageSchema, type TokenUsage } from '../contract/usage.ts';
import { StreamPartSchema } from '../contract/stream.ts';
import {
  ResumeDecisionActionSchema,
  SuspendTicketSchema,
  ToolCallResumeSchema,
  ToolDescriptorSchema,
  ToolResultSchema,
  type ToolCallResume,
  type ToolCallResumeMode,
} from '../contract/tool.ts';

/** The format tag of every transcript this version writes and reads (`migrateTranscript` brings older ones up to it). */
export const TRANSCRIPT_FORMAT = 'awaken-transcript/12';

const EnvSetupSchema = z.discriminatedUnion('kind', [
  /** `seed` only when the run drew a random number: it is inert otherwise, and so not written. */
  z.object({ kind: z.literal('deterministic'), start: z.number(), seed: z.number().optional(), tick: z.number() }),
  z.object({ kind: z.literal('recorded') }),
]);

/**
 * A plugin the run ran with: a built-in one (`PLUGIN_CATALOG`) or an app's, by id; one an app's
 * `pluginFactory` made also with the factory's name and the config it was given (credentials in it
 * `"<redacted>"`), so that a replay makes it again with the code it is given.
 */
export const PluginEntrySchema = z.union([z.object({ id: z.string(), factory: z.string(), config: JsonValueSchema }), z.object({ id: z.string() })]);
export type PluginEntry = z.output<typeof PluginEntrySchema>;

/** First line: what to rebuild the run from. */
export const HeaderSchema = z.object({
  type: z.literal('header'),
  format: z.literal(TRANSCRIPT_FORMAT),
  config_digest: z.string(),
  agent: AgentSpecSchema,
  models: z.record(z.string(), z.object({ provider: z.string(), model_name: z.string() })),
  tools: z.array(ToolDescriptorSchema),
  plugins: z.array(PluginEntrySchema),
  stop_policies: z.array(z.string()).default([]),
  circuit_breaker: z.object({ failure_threshold: z.number(), cooldown_ms: z.number(), half_open_max: z.number() }).partial().optional(),
  /**
   * The app module that ran and its version (`awaken serve --app`, `awaken record`). Not an input of
   * the run and not covered by `config_digest` — the plugins' factories and configs are — but which
   * code to replay it with.
   */
  app: z.object({ file: z.string(), version: z.string() }).optional(),
  /**
   * Which of its run's recorded segments this is, from 1 (absent: 1). A run that parks, is let go
   * (a reload, a shutdown) and is taken up again from the store (`request.run_state`) goes on in a new
   * segment, with the code current then: a transcript each, numbered in the order they were written.
   */
  segment: z.number().int().min(2).optional(),
  /**
   * A run forked from another's step (`forkTranscript`, `awaken replay --fork-at`): the parent
   * transcript (as it was named, and the SHA-256 of its text) and the step whose end it went on from,
   * as a segment taken up from the store (`request.run_state`, `recovered`). Not an input of the run.
   */
  fork: z
    .object({ parent: z.string(), parent_digest: z.string(), at_step: z.number().int().min(1) })
    .strict()
    .optional(),
  env: EnvSetupSchema,
  request: z.object({
    thread_id: z.string().optional(),
    /** The run's id when the caller chose it (a server does), else drawn by the run. */
    run_id: z.string().optional(),
    /**
     * The principal the thread belonged to when the run started (a server with API tokens writes
     * it). Not an input of the run — a replay runs the same without it — but whom the transcript
     * belongs to: the inspector lists and serves it to that principal alone (docs/inspector.md).
     */
    owner: z.string().optional(),
    agent_id: z.string(),
    messages: z.array(MessageSchema),
    overrides: InferenceOverrideSchema.optional(),
    /**
     * What the client brought besides messages (`RunRequest.clientTools`, `clientState`,
     * `clientContext`; AG-UI `tools`, `state`, `context`), each written exactly when the run was given
     * it: the tools the client runs (offered to the model after the agent's own; a call to one parks
     * the run until the client's result comes back), the client's state and its context entries.
     * Inputs of the run, like its messages: its replay is given them again.
     */
    client_tools: z.array(ToolDescriptorSchema).optional(),
    client_state: z.record(z.string(), JsonValueSchema).optional(),
    client_context: z.array(z.object({ description: z.string(), value: z.string() })).optional(),
    /**
     * The thread as the run loaded it from its store (a served run): its messages (empty for a new
     * thread) and thread-scoped state. Present exactly when the run had a store: its replay has one.
     */
    history: z.array(MessageSchema).optional(),
    thread_state: z.object({ revision: z.number().int(), extensions: z.record(z.string(), JsonValueSchema) }).optional(),
    /**
     * The run-scoped state of a run taken up again from its store (a parked run revived after a
     * reload or a restart): its replay revives the run from it and the thread, instead of starting one.
     * Such a segment emits nothing before its first decision (its `messages` are empty).
     */
    run_state: z.object({ revision: z.number().int(), extensions: z.record(z.string(), JsonValueSchema) }).optional(),
    /**
     * With `run_state`: the run was left running by a process that died and was recovered from its
     * last durable point (`AgentRuntime.recover`); its replay recovers it too, and it goes on at once.
     */
    recovered: z.literal(true).optional(),
  }),
});
export type Header = z.output<typeof HeaderSchema>;

/** A run's client inputs as its header's `request` writes them: each one the run was given, none other. */
export const clientFieldsOf = (r: ClientInputs): Pick<Header['request'], 'client_tools' | 'client_state' | 'client_context'> => ({
  ...(r.clientTools !== undefined ? { client_tools: [...r.clientTools] } : {}),
  ...(r.clientState !== undefined ? { client_state: { ...r.clientState } } : {}),
  ...(r.clientContext !== undefined ? { client_context: r.clientContext.map((c) => ({ description: c.description, value: c.value })) } : {}),
});

/** The client inputs a header's `request` gives its run back (`RunRequest.clientTools`, `clientState`, `clientContext`). */
export const clientInputsOf = (request: Header['request']): ClientInputs => ({
  ...(request.client_tools !== undefined ? { clientTools: request.client_tools } : {}),
  ...(request.client_state !== undefined ? { clientState: request.client_state } : {}),
  ...(request.client_context !== undefined ? { clientContext: request.client_context } : {}),
});

export const EnvRecordSchema = z.discriminatedUnion('draw', [
  z.object({ type: z.literal('env'), draw: z.literal('now'), value: z.number() }),
  z.object({ type: z.literal('env'), draw: z.literal('id'), kind: z.string(), value: z.string() }),
  z.object({ type: z.literal('env'), draw: z.literal('random'), value: z.number() }),
  z.object({ type: z.literal('env'), draw: z.literal('sleep'), ms: z.number() }),
]);
export type EnvRecord = z.output<typeof EnvRecordSchema>;

/** The normalised form of an inference request that the digest covers. */
export const NormalisedRequestSchema = z.object({
  model: z.string(),
  messages: z.array(MessageSchema),
  tools: z.array(ToolDescriptorSchema),
  overrides: InferenceOverrideSchema.optional(),
});
export type NormalisedRequest = z.output<typeof NormalisedRequestSchema>;

/**
 * An inference request as the change from the run's previous one: the first `kept` messages are the
 * previous request's, `messages` follow them; `tools` only when they differ from the previous
 * request's (always on the first). So a transcript grows with the run, not with its square.
 */
export const RequestDeltaSchema = z.object({
  model: z.string(),
  kept: z.number().int().nonnegative(),
  messages: z.array(MessageSchema),
  tools: z.array(ToolDescriptorSchema).optional(),
  overrides: InferenceOverrideSchema.optional(),
});
export type RequestDelta = z.output<typeof RequestDeltaSchema>;

export const LlmRecordSchema = z.object({
  type: z.literal('llm'),
  seq: z.number().int().positive(),
  /** `digestOf({previous, request})`: over this request's change and the previous inference's digest (null for the first). */
  digest: z.string(),
  request: RequestDeltaSchema,
  parts: z.array(StreamPartSchema),
  error: InferenceExecutionErrorSchema.optional(),
  /** The run stopped reading before the stream ended (a cancel mid-stream). */
  interrupted: z.boolean().optional(),
});
export type LlmRecord = z.output<typeof LlmRecordSchema>;

const PartsSchema = z.array(StreamPartSchema);

/**
 * The changes `RequestChain.next` gave: each is in canonical form (its messages and tools the
 * schemas' output, its keys in the schema's order), so the schema would write it as it is, and its
 * JSON is its line's `request`. Held weakly: a run's changes go with its transcript.
 */
const chainDeltas = new WeakSet<object>();

/**
 * An llm record's canonical line when its request is a change its chain gave: the change written as
 * it is, the parts and the error through the schema. Undefined for the schema to judge the whole
 * record: any other request, or a field the schema would refuse. Each field is read once, as the
 * schema reads it; extra fields are dropped, as the schema drops them.
 */
export function llmLine(record: object): string | undefined {
  if (Array.isArray(record)) return undefined;
  const { type, seq, digest, request, parts, error, interrupted } = record as Record<string, unknown>;
  if (type !== 'llm' || typeof request !== 'object' || request === null || !chainDeltas.has(request)) return undefined;
  if (!Number.isSafeInteger(seq) || (seq as number) < 1 || typeof digest !== 'string' || (interrupted !== undefined && typeof interrupted !== 'boolean'))
    return undefined;
  // The change is canonical as the chain made it, but a message's tool arguments and a tool's
  // parameters are the caller's own objects, which may have changed since: read now, as the schema would.
  if (typeof (request as { model?: unknown }).model !== 'string' || !isJsonValue(request)) return undefined;
  const read = PartsSchema.safeParse(parts);
  if (!read.success) return undefined;
  let errorText = '';
  if (error !== undefined) {
    const parsed = InferenceExecutionErrorSchema.safeParse(error);
    if (!parsed.success) return undefined;
    errorText = `,"error":${JSON.stringify(parsed.data)}`;
  }
  const end = interrupted !== undefined ? `,"interrupted":${interrupted}}` : '}';
  return `{"type":"llm","seq":${seq},"digest":${JSON.stringify(digest)},"request":${JSON.stringify(request)},"parts":${JSON.stringify(read.data)}${errorText}${end}`;
}

const OpSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('update'), key: z.string(), update: JsonValueSchema }),
  z.object({ kind: z.literal('clear'), key: z.string() }),
]);

/** A tool call and what came back: a result (with its staged state ops), a ToolError, or a throw. */
export const ToolRecordSchema = z.object({
  type: z.literal('tool'),
  call_id: z.string(),
  name: z.string(),
  arguments: JsonValueSchema,
  /** The decision a resumed call ran under, as the tool received it; absent on a first run. */
  resume: ToolCallResumeSchema.optional(),
  /** What the tool reported while it ran, each call with exactly its arguments (an absent optional one is `null`). */
  activity: z.array(
    z.discriminatedUnion('method', [
      z.object({ method: z.literal('activity'), args: z.tuple([z.string(), JsonValueSchema]) }),
      z.object({ method: z.literal('activity_delta'), args: z.tuple([z.string(), JsonValueSchema]) }),
      z.object({
        method: z.literal('progress'),
        args: z.tuple([z.enum(['pending', 'running', 'done', 'failed']), z.string().nullable(), z.number().nullable()]),
      }),
      z.object({ method: z.literal('stream_output'), args: z.tuple([z.string()]) }),
    ]),
  ),
  result: ToolResultSchema.optional(),
  command: z.object({ ops: z.array(OpSchema), actions: z.array(JsonValueSchema), effects: z.array(JsonValueSchema) }).optional(),
  tool_error: ToolErrorSchema.optional(),
  thrown: z.string().optional(),
});
export type ToolRecord = z.output<typeof ToolRecordSchema>;

/**
 * The approval a tool asked for at the gate, before a first run of a call (`Tool.askBefore`, the AI
 * SDK's `needsApproval`): the ticket it suspended the call with, `null` when it let the call run, or
 * what it threw.
 */
const AskBase = { type: z.literal('ask'), call_id: z.string(), name: z.string(), arguments: JsonValueSchema };
export const AskRecordSchema = z.union([
  z.object({ ...AskBase, ticket: SuspendTicketSchema.nullable() }).strict(),
  z.object({ ...AskBase, thrown: z.string() }).strict(),
]);
export type AskRecord = z.output<typeof AskRecordSchema>;

/**
 * A decision as a transcript writes it: a `ToolCallResume` whose `decision_id` and `updated_at` are
 * written only where the call keeps them (`keepsWholeDecision`).
 */
export const RecordedDecisionSchema = z
  .object({
    decision_id: z.string().optional(),
    action: ResumeDecisionActionSchema,
    result: JsonValueSchema.optional(),
    reason: z.string().optional(),
    updated_at: z.number().int().nonnegative().optional(),
  })
  .transform((r) => {
    if (r.result !== null) return r;
    const { result: _null, ...rest } = r;
    return rest;
  });
export type RecordedDecision = z.output<typeof RecordedDecisionSchema>;

export const DecisionRecordSchema = z.object({
  type: z.literal('decision'),
  after_event: z.number().int().nonnegative(),
  decisions: z.array(z.object({ target_id: z.string(), decision: RecordedDecisionSchema })),
});
export type DecisionRecord = z.output<typeof DecisionRecordSchema>;

/**
 * Whether a call keeps the whole decision it is given, its id and time included: a resumed tool
 * receives it (`replay_tool_call`, `pass_decision_to_tool`), a cancelled call's state holds it. A call
 * resumed in `use_decision_as_tool_result` mode keeps only the decision's result — its id and time
 * reach no tool, event or state, so a transcript does not write them (an edit of them could change
 * nothing the replay sees).
 */
export const keepsWholeDecision = (action: ToolCallResume['action'], mode: ToolCallResumeMode | undefined): boolean =>
  !(action === 'resume' && mode === 'use_decision_as_tool_result');

/** The decision as a transcript writes it, for a call suspended in `mode`. */
export function recordedDecision(decision: ToolCallResume, mode: ToolCallResumeMode | undefined): RecordedDecision {
  if (keepsWholeDecision(decision.action, mode)) return decision;
  const { decision_id: _id, updated_at: _at, ...rest } = decision;
  return rest;
}

/** The fields of a recorded decision that disagree with how its call keeps it: written but inert, or missing. */
export function decisionFieldProblem(recorded: RecordedDecision, mode: ToolCallResumeMode | undefined): string | undefined {
  const fields = (['decision_id', 'updated_at'] as const).filter((f) =>
    keepsWholeDecision(recorded.action, mode) ? recorded[f] === undefined : recorded[f] !== undefined,
  );
  if (fields.length === 0) return undefined;
  return keepsWholeDecision(recorded.action, mode)
    ? `lacks ${fields.join(', ')}: the call keeps the decision whole`
    : `writes ${fields.join(', ')}: the call resumes in use_decision_as_tool_result mode and keeps only the decision's result, so a transcript does not write them`;
}

/** The decision a recorded one stands for (what the run is given). */
export const decisionOf = (recorded: RecordedDecision): ToolCallResume =>
  ({ ...recorded, decision_id: recorded.decision_id ?? '', updated_at: recorded.updated_at ?? 0 }) as ToolCallResume;

/**
 * The resume mode of every call a run has suspended so far, by call id and suspension id, read from
 * its `tool_call_done` events (the ticket a suspended call reports carries the mode).
 */
export class SuspensionModes {
  readonly #modes = new Map<string, ToolCallResumeMode>();

  /** Takes note of an event (an `AgentEvent`, or its JSON in a transcript). */
  note(event: unknown): void {
    const e = event as { event_type?: unknown; id?: unknown; result?: { suspension?: { suspension?: { id?: unknown }; resume_mode?: unknown } } };
    if (e.event_type !== 'tool_call_done') return;
    const ticket = e.result?.suspension;
    const mode = ticket?.resume_mode;
    if (typeof mode !== 'string') return;
    if (typeof e.id === 'string') this.#modes.set(e.id, mode as ToolCallResumeMode);
    const suspensionId = ticket?.suspension?.id;
    if (typeof suspensionId === 'string') this.#modes.set(suspensionId, mode as ToolCallResumeMode);
  }

  /**
   * Takes note of the calls a parked run waits on: a run taken up from the store emitted none of
   * their `tool_call_done` events in its own segment, its ticket is where their mode is.
   */
  noteWaiting(
    calls: readonly {
      readonly call: { readonly id: string };
      readonly ticket?: { readonly resume_mode: ToolCallResumeMode; readonly suspension: { readonly id: string } } | undefined;
    }[],
  ): void {
    for (const { call, ticket } of calls) {
      if (ticket === undefined) continue;
      this.#modes.set(call.id, ticket.resume_mode);
      this.#modes.set(ticket.suspension.id, ticket.resume_mode);
    }
  }

  of(targetId: string): ToolCallResumeMode | undefined {
    return this.#modes.get(targetId);
  }
}

/**
 * A decision or a cancel comes after at least one event (`run_start`) of a run that starts; a segment
 * taken up from the store (`request.run_state`) emits nothing before its first decision, so there
 * `after_event` may be 0.
 */
export const CancelRecordSchema = z.object({ type: z.literal('cancel'), after_event: z.number().int().nonnegative() });
export type CancelRecord = z.output<typeof CancelRecordSchema>;

export const EventRecordSchema = z.object({ type: z.literal('event'), seq: z.number().int().nonnegative(), event: JsonValueSchema });

/**
 * Last line: how the run ended — its result (every inference failure it saw included) and the
 * thread's messages as it left them (what a store keeps) — checked against the replayed run's.
 */
export const EndRecordSchema = z.object({
  type: z.literal('end'),
  result: z.object({
    response: z.string(),
    steps: z.number().int().nonnegative(),
    termination: TerminationReasonSchema,
    usage: TokenUsageSchema,
    inference_errors: z.array(InferenceExecutionErrorSchema),
  }),
  messages: z.array(MessageSchema),
});
export type EndRecord = z.output<typeof EndRecordSchema>;

/** The `end` record of a run, canonical. */
export function endRecordOf(
  result: {
    readonly response: string;
    readonly steps: number;
    readonly termination: TerminationReason;
    readonly usage: TokenUsage;
    readonly inferenceErrors: readonly unknown[];
  },
  messages: readonly Message[],
): EndRecord {
  return EndRecordSchema.parse({
    type: 'end',
    result: { response: result.response, steps: result.steps, termination: result.termination, usage: result.usage, inference_errors: result.inferenceErrors },
    messages,
  });
}

export const RecordSchema = z.union([
  HeaderSchema,
  EnvRecordSchema,
  LlmRecordSchema,
  ToolRecordSchema,
  AskRecordSchema,
  DecisionRecordSchema,
  CancelRecordSchema,
  EventRecordSchema,
  EndRecordSchema,
]);
export type TranscriptRecord = z.output<typeof RecordSchema>;

const BY_TYPE: Readonly<Record<string, z.ZodType>> = {
  header: HeaderSchema,
  env: EnvRecordSchema,
  llm: LlmRecordSchema,
  tool: ToolRecordSchema,
  ask: AskRecordSchema,
  decision: DecisionRecordSchema,
  cancel: CancelRecordSchema,
  event: EventRecordSchema,
  end: EndRecordSchema,
};

/** Validates one record with the schema its `type` names (one schema tried, not seven). */
export function parseRecord(json: unknown): z.ZodSafeParseResult<TranscriptRecord> {
  const type = typeof json === 'object' && json !== null ? (json as { type?: unknown }).type : undefined;
  const schema = typeof type === 'string' && Object.hasOwn(BY_TYPE, type) ? BY_TYPE[type] : undefined;
  return (schema ?? RecordSchema).safeParse(json) as z.ZodSafeParseResult<TranscriptRecord>;
}

/** A line as read: its number, text, and record — or why it is not one. */
export type ReadLine =
  | { readonly line: number; readonly text: string; readonly ok: true; readonly record: TranscriptRecord }
  | { readonly line: number; readonly text: string; readonly ok: false; readonly reason: string; readonly type: string | undefined };

/**
 * Reads a transcript leniently: a line that is not a valid record is kept as such, so the replay
 * reports it where the run reaches it instead of refusing the whole file.
 */
export function readTranscript(text: string, read: (t: string, line: number) => ReadLine = readLine): ReadLine[] {
  const out: ReadLine[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const t = lines[i] as string;
    if (t.trim() !== '') out.push(read(t, i + 1));
  }
  return out;
}

const NUMBER = '(-?(?:0|[1-9]\\d*)(?:\\.\\d+)?(?:[eE][+-]?\\d+)?)';
const ENV_NUMBER = new RegExp(`^\\{"type":"env","draw":"(now|random)","value":${NUMBER}\\}$`);
const ENV_SLEEP = new RegExp(`^\\{"type":"env","draw":"sleep","ms":${NUMBER}\\}$`);
const ENV_ID = /^\{"type":"env","draw":"id","kind":"([^"\\\u0000-\u001f]*)","value":"([^"\\\u0000-\u001f]*)"\}$/;

/**
 * An `env` line in its canonical form, read without the general path (they are a third of a
 * transcript): the same record the schema gives, or undefined to take the general path.
 */
function envLine(t: string): EnvRecord | undefined {
  if (!t.startsWith('{"type":"env",')) return undefined;
  const canonical = (n: string): number | undefined => {
    const v = Number(n);
    return JSON.stringify(v) === n ? v : undefined;
  };
  let m = ENV_NUMBER.exec(t);
  if (m !== null) {
    const value = canonical(m[2] as string);
    return value === undefined ? undefined : { type: 'env', draw: m[1] as 'now' | 'random', value };
  }
  m = ENV_ID.exec(t);
  if (m !== null) return { type: 'env', draw: 'id', kind: m[1] as string, value: m[2] as string };
  m = ENV_SLEEP.exec(t);
  if (m !== null) {
    const ms = canonical(m[1] as string);
    return ms === undefined ? undefined : { type: 'env', draw: 'sleep', ms };
  }
  return undefined;
}

/** Reads one line (numbered from 1) as a record, or says why it is not one. */
export function readLine(t: string, line: number): ReadLine {
  const env = envLine(t);
  if (env !== undefined) return { line, text: t, ok: true, record: env };
  let json: unknown;
  try {
    json = JSON.parse(t);
  } catch (e) {
    return { line, text: t, ok: false, reason: `not JSON: ${(e as Error).message}`, type: /"type":"([a-z]+)"/.exec(t)?.[1] };
  }
  const parsed = parseRecord(json);
  const type = typeof json === 'object' && json !== null ? String((json as { type?: unknown }).type) : undefined;
  if (!parsed.success) return { line, text: t, ok: false, reason: parsed.error.issues.map((x) => `${x.path.join('.')}: ${x.message}`).join('; '), type };
  // Records are written canonically; one that is not (an unknown key, a key out of order, a value a
  // default would fill) was edited, and is not trusted.
  if (JSON.stringify(parsed.data) !== t) return { line, text: t, ok: false, reason: 'the record is not in canonical form', type };
  return { line, text: t, ok: true, record: parsed.data };
}

/** SHA-256 of the compact JSON of a value, as `sha256:<hex>`. */
export const digestOf = (value: unknown): string => digestOfText(JSON.stringify(value));

const digestOfText = (text: string): string => `sha256:${createHash('sha256').update(text).digest('hex')}`;

/**
 * Canonical forms already computed, one table per schema: an object offered as a tool and sent as a
 * message (nothing forbids it) has a canonical form as each, and neither stands for the other.
 */
const canonicalForms = new Map<z.ZodType, WeakMap<object, unknown>>([
  [MessageSchema, new WeakMap()],
  [ToolDescriptorSchema, new WeakMap()],
]);

/** Canonical form of one message or descriptor, computed once per object (history is reused every step). */
function canonicalOf<S extends typeof MessageSchema | typeof ToolDescriptorSchema>(value: object, schema: S): z.output<S> {
  const forms = canonicalForms.get(schema) as WeakMap<object, unknown>;
  let c = forms.get(value);
  if (c === undefined) {
    c = schema.parse(value);
    forms.set(value, c);
  }
  return c as z.output<S>;
}

const canonicalText = new WeakMap<object, string>();

/** Canonical JSON of one message, computed once per object. */
function messageText(m: object): string {
  let t = canonicalText.get(m);
  if (t === undefined) {
    t = JSON.stringify(canonicalOf(m, MessageSchema));
    canonicalText.set(m, t);
  }
  return t;
}

/**
 * A run's requests as a chain: each written as its change from the one before (`RequestDelta`), under
 * a digest that covers the change and the previous digest — so each request costs what it adds, and
 * one digest still stands for everything sent so far. Messages are compared by identity first (the
 * runtime shares them between requests), then by their canonical JSON.
 */
export class RequestChain {
  readonly #messages: object[] = [];
  readonly #texts: string[] = [];
  #tools: string | undefined;
  #digest: string | null = null;
  readonly #memo: Map<string, string> | undefined;
  /** The last request's array of messages: when it is the same one again and only grows, what is held of it is still in it. */
  #list: readonly object[] | undefined;
  /** The request taken last, and what the chain gave it. */
  #last: { readonly request: object; readonly delta: RequestDelta; readonly digest: string } | undefined;

  /** `memo`: digests already taken, by the text they cover (`chainDigestIn`), shared with whoever else hashes the same requests. */
  constructor(memo?: Map<string, string>) {
    this.#memo = memo;
  }

  next(r: { model: string; messages: readonly object[]; tools: readonly object[]; overrides?: unknown }): {
    readonly delta: RequestDelta;
    readonly digest: string;
  } {
    const held = this.#messages;
    const list = r.messages;
    const n = Math.min(held.length, list.length);
    // Without the shortcut each request reads every message before it again: a run's cost in steps squared.
    let kept = list === this.#list && isAppendOnly(list) ? n : 0;
    while (kept < n && (held[kept] === list[kept] || this.#texts[kept] === messageText(list[kept] as object))) kept++;
    // Everything that can throw (a message, a tool or overrides the schemas refuse) runs before the
    // chain changes: a refused request leaves it as it was, its held messages still the list's.
    const fresh: object[] = [];
    const added: Message[] = [];
    const texts: string[] = [];
    for (let i = kept; i < list.length; i++) {
      const m = list[i] as object;
      fresh.push(m);
      texts.push(messageText(m));
      added.push(canonicalOf(m, MessageSchema));
    }
    // Written out at every request, though a run offers the same descriptors: a tool's parameters
    // are its own object (the canonical form keeps it), and may change between requests.
    const tools = r.tools.map((t) => canonicalOf(t, ToolDescriptorSchema));
    const toolsText = JSON.stringify(tools);
    const overrides = r.overrides !== undefined ? InferenceOverrideSchema.parse(r.overrides) : undefined;
    // Not frozen (freezing cost a replay a few per cent): only the recorder holds it, and writes it as
    // it is; its tool arguments and parameters are the caller's objects, which `llmLine` reads again.
    const delta = {
      model: r.model,
      kept,
      messages: added,
      ...(toolsText !== this.#tools ? { tools } : {}),
      ...(overrides !== undefined ? { overrides } : {}),
    } as RequestDelta;
    // Written now, not put together from `texts`: a tool call's arguments are the caller's object,
    // and may have changed since the message's text was first taken.
    const text = JSON.stringify(delta);
    const digest = this.#memo === undefined ? digestOfText(chainText(this.#digest, text)) : chainDigestOfText(this.#memo, this.#digest, text);
    chainDeltas.add(delta);
    held.length = kept;
    this.#texts.length = kept;
    for (const m of fresh) held.push(m);
    for (const t of texts) this.#texts.push(t);
    this.#tools = toolsText;
    this.#list = list;
    this.#digest = digest;
    this.#last = { request: r, delta, digest };
    return this.#last;
  }

  /**
   * What `next` gave `request`, when it is the request the chain took last (the same object);
   * undefined otherwise. Another reader of the same requests in the same order (the replay's model
   * port, behind its recorder) takes the digest from here rather than building the change again.
   */
  taken(request: object): { readonly delta: RequestDelta; readonly digest: string } | undefined {
    return this.#last !== undefined && this.#last.request === request ? this.#last : undefined;
  }
}

/** The text a chain's digest covers: `JSON.stringify({ previous, request })`, the request given as its JSON. */
const chainText = (previous: string | null, request: string): string => `{"previous":${JSON.stringify(previous)},"request":${request}}`;

/** The digest of a request given as its change, after the previous request's digest (null for the first). */
export const chainDigest = (previous: string | null, delta: RequestDelta): string => digestOf({ previous, request: delta });

/**
 * `chainDigest`, kept in `memo` by the text it covers: a replay meets each request three times (the
 * recorded one checked against its digest, the replayed one at its port, and again as it re-records
 * it), and one hash serves the three when they are the same.
 */
export function chainDigestIn(memo: Map<string, string>, previous: string | null, delta: RequestDelta): string {
  return chainDigestOfText(memo, previous, JSON.stringify(delta));
}

/** `chainDigestIn`, the request given as its JSON. */
function chainDigestOfText(memo: Map<string, string>, previous: string | null, request: string): string {
  const text = chainText(previous, request);
  let digest = memo.get(text);
  if (digest === undefined) {
    digest = digestOfText(text);
    memo.set(text, digest);
  }
  return digest;
}

/** The full requests of a chain of changes, in order (undefined past a change that does not apply). */
export function applyDeltas(deltas: readonly RequestDelta[]): (NormalisedRequest | undefined)[] {
  const out: (NormalisedRequest | undefined)[] = [];
  let previous: NormalisedRequest | undefined = { model: '', messages: [], tools: [] };
  for (const d of deltas) {
    const tools: NormalisedRequest['tools'] | undefined = d.tools ?? previous?.tools;
    previous =
      previous === undefined || d.kept > previous.messages.length || tools === undefined
        ? undefined
        : {
            model: d.model,
            messages: [...previous.messages.slice(0, d.kept), ...d.messages],
            tools,
            ...(d.overrides !== undefined ? { overrides: d.overrides } : {}),
          };
    out.push(previous);
  }
  return out;
}

/** The request as the digest sees it: canonical messages, tool descriptors and overrides. */
export function normaliseRequest(r: { model: string; messages: readonly object[]; tools: readonly object[]; overrides?: unknown }): NormalisedRequest {
  return {
    model: r.model,
    messages: r.messages.map((m) => canonicalOf(m, MessageSchema)),
    tools: r.tools.map((t) => canonicalOf(t, ToolDescriptorSchema)),
    ...(r.overrides !== undefined ? { overrides: InferenceOverrideSchema.parse(r.overrides) } : {}),
  } as NormalisedRequest;
}

/** Digest of what a transcript's run depends on beside its inputs: agent, models, tools, plugins, stop policies, circuit breaker. */
export const configDigest = (h: Pick<Header, 'agent' | 'models' | 'tools' | 'plugins' | 'stop_policies' | 'circuit_breaker'>): string =>
  digestOf({ agent: h.agent, models: h.models, tools: h.tools, plugins: h.plugins, stop_policies: h.stop_policies, circuit_breaker: h.circuit_breaker });

export type { AgentSpec, JsonValue };
