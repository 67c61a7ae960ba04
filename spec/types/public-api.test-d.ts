// The public types a user's code is written against, pinned: `tsc --noEmit` (the first step of
// `npm test`) checks this file, so a change to one of these shapes fails the check before it ships.
// Type-level only: nothing here runs (the runtime side of the root entry is spec/package/exports.spec.ts).
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import {
  type AgentRuntime,
  AgentRuntimeBuilder,
  defineApp,
  defineStateKey,
  defineTool,
  type PluginRegistrar,
  Snapshot,
  StateCommand,
  ToolInterceptAction,
  ToolResults,
  type AgentRunResult,
  type AgentSpecInput,
  type AiSdkToolLike,
  type AppDefinition,
  type BuildError,
  type JsonValue,
  type LanguageModelLike,
  type LlmExecutor,
  type Message,
  type ModelEntry,
  type PhaseContext,
  type PhaseHook,
  type Plugin,
  type PluginConfigKey,
  type Result,
  type RuntimePlugin,
  type RuntimeError,
  type RunTap,
  type StateKey,
  type StopPolicy,
  type TapRun,
  type Tool,
  type ToolCall,
  type ToolCallContext,
  type ToolDescriptor,
  type ToolOutput,
  type ToolResult,
} from 'awaken-ts';

describe('plugins', () => {
  it('RuntimePlugin is a Plugin (a name and a register over the registrar) with optional config keys and a tap', () => {
    expectTypeOf<RuntimePlugin>().toExtend<Plugin>();
    expectTypeOf<RuntimePlugin['name']>().toEqualTypeOf<string>();
    expectTypeOf<RuntimePlugin['register']>().toEqualTypeOf<(registrar: PluginRegistrar) => void>();
    expectTypeOf<RuntimePlugin['configKeys']>().toEqualTypeOf<readonly PluginConfigKey<unknown>[] | undefined>();
    expectTypeOf<RuntimePlugin['tap']>().toEqualTypeOf<((run: TapRun) => RunTap | undefined) | undefined>();
    expectTypeOf<{ name: string; register: (r: PluginRegistrar) => void }>().toExtend<RuntimePlugin>();
  });

  it("a hook's context: the phase, a snapshot, and that phase's input (before_tool_execute: the call and the messages)", () => {
    type Ctx = PhaseContext<'before_tool_execute'>;
    expectTypeOf<Ctx['phase']>().toEqualTypeOf<'before_tool_execute'>();
    expectTypeOf<Ctx['snapshot']>().toEqualTypeOf<Snapshot>();
    expectTypeOf<Ctx['input']['toolCall']>().toEqualTypeOf<ToolCall>();
    expectTypeOf<ToolCall>().toEqualTypeOf<{ id: string; name: string; arguments: JsonValue }>();
    expectTypeOf<Ctx['input']['messages']>().toEqualTypeOf<readonly Message[]>();
    expectTypeOf<Pick<Ctx['input'], 'threadId' | 'runId'>>().toEqualTypeOf<{ readonly threadId: string; readonly runId: string }>();
  });

  it('a hook may answer with a StateCommand, at once or as a promise; ToolInterceptAction takes the call id and the intercept', () => {
    expectTypeOf<() => StateCommand>().toExtend<PhaseHook<'before_tool_execute'>>();
    expectTypeOf<() => Promise<StateCommand>>().toExtend<PhaseHook<'run_end'>>();
    const block = StateCommand.empty().scheduleAction(ToolInterceptAction, { call_id: 'c1', intercept: { type: 'block', reason: 'no' } });
    expectTypeOf(block).toEqualTypeOf<StateCommand>();
    // @ts-expect-error: an intercept needs its type
    StateCommand.empty().scheduleAction(ToolInterceptAction, { call_id: 'c1', intercept: { reason: 'no' } });
  });
});

describe('state keys', () => {
  it('defineStateKey infers the value and the update from init and apply', () => {
    const Visits = defineStateKey({ key: 'demo.visits', init: () => 0, apply: (n: number, by: number) => n + by, codec: z.number() });
    expectTypeOf(Visits).toEqualTypeOf<StateKey<number, number>>();
    const Names = defineStateKey({
      key: 'demo.names',
      init: (): readonly string[] => [],
      apply: (xs, x: string) => [...xs, x],
      codec: z.array(z.string()).readonly(),
    });
    expectTypeOf(Names).toEqualTypeOf<StateKey<readonly string[], string>>();
  });

  it('a key types what a snapshot reads and what a command writes', () => {
    const Visits = defineStateKey({ key: 'demo.visits', init: () => 0, apply: (n: number, by: number) => n + by, codec: z.number() });
    expectTypeOf(new Snapshot(0, new Map()).get(Visits)).toEqualTypeOf<number | undefined>();
    expectTypeOf(new Snapshot(0, new Map()).getOrDefault(Visits)).toEqualTypeOf<number>();
    // @ts-expect-error: the update of a number key that adds is a number
    StateCommand.empty().update(Visits, 'one');
  });
});

describe('building and running', () => {
  it('AgentRuntimeBuilder.build() answers a Result: the runtime, or a BuildError', () => {
    expectTypeOf(new AgentRuntimeBuilder().build()).toEqualTypeOf<Result<AgentRuntime, BuildError>>();
    expectTypeOf<Result<AgentRuntime, BuildError>>().toEqualTypeOf<
      { readonly ok: true; readonly value: AgentRuntime } | { readonly ok: false; readonly error: BuildError }
    >();
    expectTypeOf<AgentRuntime['run']>().returns.toEqualTypeOf<Promise<Result<AgentRunResult, RuntimeError>>>();
    expectTypeOf<AgentRunResult>().toHaveProperty('response').toEqualTypeOf<string>();
    expectTypeOf<AgentRuntimeBuilder['withModel']>().parameters.toEqualTypeOf<[id: string, entry: ModelEntry]>();
    expectTypeOf<AgentRuntimeBuilder['withPlugin']>().parameters.toEqualTypeOf<[id: string, plugin: RuntimePlugin]>();
  });

  it('defineApp takes an AppDefinition and gives back exactly what it was given (the CLI reads it)', () => {
    expectTypeOf(defineApp).parameter(0).toExtend<AppDefinition>();
    const app = defineApp({ agents: [{ id: 'a', model: 'm' }], models: { m: { provider: 'p', model_name: 'n' } } });
    expectTypeOf(app.agents[0].id).toEqualTypeOf<'a'>();
    expectTypeOf<AppDefinition>().toEqualTypeOf<{
      readonly agents?: readonly AgentSpecInput[];
      readonly tools?: readonly Tool[] | Readonly<Record<string, Tool | AiSdkToolLike>>;
      readonly plugins?: readonly (Plugin | RuntimePlugin)[];
      readonly models?: Readonly<Record<string, ModelEntry>>;
      readonly providers?: Readonly<Record<string, LlmExecutor | LanguageModelLike>>;
      readonly stopPolicies?: readonly StopPolicy[];
    }>();
    // @ts-expect-error: an unknown field of the app is a type error, not a silent no-op
    defineApp({ agent: [] });
  });
});

describe('tools', () => {
  it('a Tool: a descriptor, optional validation and approval, and execute over JSON arguments and the call context', () => {
    expectTypeOf<Tool['descriptor']>().toEqualTypeOf<ToolDescriptor>();
    expectTypeOf<Tool['execute']>().parameters.toEqualTypeOf<[args: JsonValue, ctx: ToolCallContext]>();
    expectTypeOf<Tool['execute']>().returns.toEqualTypeOf<ToolResult | ToolOutput | Promise<ToolResult | ToolOutput>>();
    expectTypeOf<ToolCallContext['callId']>().toEqualTypeOf<string>();
    expectTypeOf<ToolCallContext['signal']>().toEqualTypeOf<AbortSignal>();
  });

  it("defineTool types execute's arguments from the zod schema and makes a Tool", () => {
    const echo = defineTool({
      id: 'echo',
      description: 'Echo',
      args: z.object({ text: z.string(), times: z.number().optional() }),
      execute: (args) => {
        expectTypeOf(args).toEqualTypeOf<{ text: string; times?: number | undefined }>();
        return ToolResults.success('echo', args.text);
      },
    });
    expectTypeOf(echo).toEqualTypeOf<Tool>();
  });
});
