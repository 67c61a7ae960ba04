import { z } from 'zod';
import { definePluginConfigKey, type ContextWindowPolicy, type PluginConfigKey } from '../contract/agent-spec.ts';
import { Messages, type Message } from '../contract/message.ts';
import { streamText } from '../contract/stream.ts';
import {
  CompactionConfigSchema,
  compactionView,
  ContextTransformConfigSchema,
  estimateTokens,
  insertSummary,
  passesSavingsGate,
  planCompaction,
  shouldAutocompact,
  summarizerUserPrompt,
  summaryText,
  transformContext,
  type CompactionConfig,
  type ContextReport,
  type ContextTransformConfig,
  type Tokenizer,
} from '../core/context/index.ts';
import type { Plugin } from '../core/phase/plugin.ts';
import { defineStateKey } from '../core/state/state-key.ts';
import { collectStream, type InferenceRequest, type LlmExecutor } from './llm.ts';

/** Section `context_transform`: artifact-compaction settings of the request transform. */
export const ContextTransformConfigKey = definePluginConfigKey<ContextTransformConfig>(
  'context_transform',
  ContextTransformConfigSchema as z.ZodType<ContextTransformConfig>,
  () => ContextTransformConfigSchema.parse({}),
);

/** Section `compaction` (book: CompactionConfig). */
export const CompactionConfigKey = definePluginConfigKey<CompactionConfig>('compaction', CompactionConfigSchema as z.ZodType<CompactionConfig>, () =>
  CompactionConfigSchema.parse({}),
);

export const CONTEXT_CONFIG_KEYS: readonly PluginConfigKey<unknown>[] = [
  ContextTransformConfigKey as PluginConfigKey<unknown>,
  CompactionConfigKey as PluginConfigKey<unknown>,
];

/** What a run needs to manage its context window; present when the agent sets `context_policy`. */
export interface ResolvedContext {
  /** The effective policy (clamped to the model). */
  readonly policy: ContextWindowPolicy;
  readonly transform: ContextTransformConfig;
  readonly compaction: CompactionConfig;
  readonly tokenizer: Tokenizer;
  readonly summarizer: Summarizer;
}

/** A request carrying what the context transform did (providers ignore it; the loop reports it). */
export type ReportedRequest = InferenceRequest & { readonly contextReport?: ContextReport };

export const CONTEXT_TRANSFORM_PLUGIN = 'context_transform';
export const COMPACTION_PLUGIN = 'compaction';

/**
 * ContextTransformPlugin (book: 智能体解析 → 条件插件): a request transform that makes tool pairs whole,
 * previews oversized tool results and truncates the oldest history to the budget. It changes the
 * request copy only; the stored history is never truncated.
 */
export function contextTransformPlugin(context: Pick<ResolvedContext, 'policy' | 'transform' | 'tokenizer'>): Plugin {
  return {
    name: CONTEXT_TRANSFORM_PLUGIN,
    register: (r) => {
      r.registerRequestTransform<ReportedRequest>((request) => {
        const { messages, report } = transformContext(request.messages, request.tools, context.policy, {
          artifact: context.transform.artifact_compaction,
          tokenizer: context.tokenizer,
        });
        return { ...request, messages, contextReport: report };
      });
    },
  };
}

/** The latest compaction of the thread, and how many there were (thread-scoped: it outlives runs). */
export interface CompactionRecord {
  readonly total_compactions: number;
  readonly last?: {
    readonly summary_message_id: string;
    readonly boundary_message_id: string;
    readonly pre_tokens: number;
    readonly post_tokens: number;
  };
}

export const CompactionStateKey = defineStateKey<CompactionRecord, CompactionRecord>({
  key: 'context.compaction',
  init: () => ({ total_compactions: 0 }),
  apply: (_s, u) => u,
  codec: z.object({
    total_compactions: z.number().int().nonnegative(),
    last: z.object({ summary_message_id: z.string(), boundary_message_id: z.string(), pre_tokens: z.number(), post_tokens: z.number() }).optional(),
  }) as z.ZodType<CompactionRecord>,
});

/** CompactionPlugin: owns the compaction record; the loop runs the compaction itself (it owns the history). */
export const compactionPlugin: Plugin = {
  name: COMPACTION_PLUGIN,
  register: (r) => {
    r.registerKey(CompactionStateKey, { scope: 'thread' });
  },
};

/** The summarizer port: a transcript (and the previous summary) in, a summary out. */
export interface Summarizer {
  summarize(input: {
    readonly transcript: string;
    readonly previousSummary: string | undefined;
    readonly config: CompactionConfig;
    /** The agent's provider-side model (used when `summary_model` is unset). */
    readonly model: string;
    readonly signal?: AbortSignal;
  }): Promise<string>;
}

/** A summary that came back empty. */
export class EmptySummary extends Error {
  constructor() {
    super('the summarizer returned an empty summary');
    this.name = 'EmptySummary';
  }
}

/**
 * The DefaultSummarizer: one request to `llm` — the configured system prompt, then the user prompt
 * with `{previous_summary}` and `{messages}` filled in — with `summary_max_tokens` (default 1024) and
 * `summary_model` (default the agent's model). Incremental: the previous summary is part of the prompt.
 */
export function defaultSummarizer(llm: LlmExecutor): Summarizer {
  return {
    async summarize({ transcript, previousSummary, config, model, signal }) {
      const request: InferenceRequest = {
        model: config.summary_model ?? model,
        messages: [Messages.system(config.summarizer_system_prompt), Messages.user(summarizerUserPrompt(config, transcript, previousSummary))],
        tools: [],
        overrides: { max_tokens: config.summary_max_tokens ?? 1024 },
        ...(signal !== undefined ? { signal } : {}),
      };
      const text = streamText(await collectStream(llm.stream(request))).trim();
      if (text === '') throw new EmptySummary();
      return text;
    },
  };
}

/** What one compaction attempt did. */
export type CompactionOutcome =
  | { readonly status: 'compacted'; readonly history: Message[]; readonly record: NonNullable<CompactionRecord['last']> }
  | { readonly status: 'skipped'; readonly reason: 'min_savings_ratio'; readonly pre_tokens: number; readonly post_tokens: number }
  | { readonly status: 'failed'; readonly message: string; readonly pre_tokens: number };

/**
 * Auto-compaction before an inference (core-spec §5.6, run in the foreground so a run stays
 * replayable): when the sent view reaches `autocompact_threshold`, plan a safe frontier, ask the
 * summarizer, check the savings, and insert the summary after the frontier. `undefined` when it did
 * not fire or there was nothing to summarise; `onStart` is called once it fires.
 */
export async function autocompact(
  history: readonly Message[],
  context: ResolvedContext,
  deps: { readonly model: string; readonly summaryId: () => string; readonly onStart: (preTokens: number) => Promise<void>; readonly signal?: AbortSignal },
): Promise<CompactionOutcome | undefined> {
  const view = compactionView(history);
  if (!shouldAutocompact(estimateTokens(view, context.tokenizer), context.policy)) return undefined;
  const plan = planCompaction(view, context.policy, context.compaction, context.tokenizer);
  if (plan === undefined) return undefined;
  await deps.onStart(plan.preTokens);
  let summary: string;
  try {
    summary = await context.summarizer.summarize({
      transcript: plan.transcript,
      previousSummary: plan.previousSummary,
      config: context.compaction,
      model: deps.model,
      ...(deps.signal !== undefined ? { signal: deps.signal } : {}),
    });
  } catch (e) {
    return { status: 'failed', message: e instanceof Error ? e.message : String(e), pre_tokens: plan.preTokens };
  }
  const message = Messages.internalSystem(summaryText(summary), { id: deps.summaryId() });
  const post = context.tokenizer.messageTokens(message);
  if (!passesSavingsGate(plan.preTokens, post, context.compaction.min_savings_ratio)) {
    return { status: 'skipped', reason: 'min_savings_ratio', pre_tokens: plan.preTokens, post_tokens: post };
  }
  const viewStart = history.length - view.length;
  const boundary = view[plan.boundary] as Message;
  return {
    status: 'compacted',
    history: insertSummary(history, viewStart, plan.boundary, message),
    record: { summary_message_id: message.id as string, boundary_message_id: boundary.id ?? '', pre_tokens: plan.preTokens, post_tokens: post },
  };
}
