import * as ai6 from 'ai';
import * as ai7 from 'ai7';
import type { JSONSchema7, UIMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { aiSdkTool, isAiSdkTool } from '../../src/app/ai-sdk-tool.ts';
import type { AiSdkToolLike } from '../../src/app/define.ts';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { permissionPlugin } from '../../src/plugins/permission.ts';
import { encodeAiSdk } from '../../src/protocols/ai-sdk-v6/encoder.ts';
import { defineTool, ToolFailure, type Tool } from '../../src/runtime/tool.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { State } from '../support/ai-chat.ts';
import { harness, waitFor, type Harness } from '../support/runtime.ts';
import { testServer } from '../support/server.ts';

/**
 * Tools written with the AI SDK's `tool()` (`ai@6` and `ai@7`), run unchanged by awaken: their
 * schema, their `execute` (a value, or an async generator streaming preliminary outputs),
 * `needsApproval` (suspended as awaken's own approval gate suspends) and `toModelOutput`.
 */

type Ai = typeof ai6;
const FLAVOURS: readonly (readonly [string, Ai])[] = [
  ['ai@6', ai6],
  ['ai@7', ai7 as unknown as Ai],
];

type Done = Extract<AgentEvent, { event_type: 'tool_call_done' }>;
type Resumed = Extract<AgentEvent, { event_type: 'tool_call_resumed' }>;
const doneOf = (h: Harness): Done[] => h.sink.events.filter((e): e is Done => e.event_type === 'tool_call_done');
const resumedOf = (h: Harness): Resumed[] => h.sink.events.filter((e): e is Resumed => e.event_type === 'tool_call_resumed');
/** The text of the tool message the model was sent in inference `n`. */
const toolMessageIn = (h: Harness, n: number): string | undefined => {
  const m = h.llm.requests[n]?.messages.find((x) => x.role === 'tool');
  return m?.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
};

const weatherArgs = z.object({ city: z.string().describe('the city'), days: z.number().min(1).default(1) });
const WEATHER_JSON_SCHEMA: JSONSchema7 = {
  type: 'object',
  properties: { city: { type: 'string', description: 'the city' }, days: { type: 'number', minimum: 1 } },
  required: ['city'],
  additionalProperties: false,
};

/** A `jsonSchema()` with a validator of its own (what the AI SDK validates with, when given). */
const jsonWeather = (ai: Ai) =>
  ai.jsonSchema<{ city: string; days?: number }>(WEATHER_JSON_SCHEMA, {
    validate: (v) => {
      const o = v as { city?: unknown };
      return typeof o === 'object' && o !== null && typeof o.city === 'string'
        ? { success: true, value: o as { city: string } }
        : { success: false, error: new Error('city: expected a string') };
    },
  });

/** One call of `name` with `args`, then a text answer. */
const oneCall = (name: string, args: Record<string, unknown>, id = 'c1') => [{ tool_calls: [{ id, name, arguments: args as never }] }, { text: 'ok' }];

async function runOne(tool: Tool, args: Record<string, unknown>): Promise<Harness> {
  const h = harness(oneCall(tool.descriptor.id, args), { tools: [tool] });
  const r = await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
  if (!r.ok) throw new Error(JSON.stringify(r.error));
  expect(checkRunInvariants(h.sink.events)).toEqual([]);
  return h;
}

/** Starts a run of one call and waits until it is parked on a decision. */
async function startParked(tool: Tool, args: Record<string, unknown>) {
  const h = harness(oneCall(tool.descriptor.id, args), { tools: [tool] });
  const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
  if (!started.ok) throw new Error(JSON.stringify(started.error));
  await waitFor(() => h.runtime.isWaiting(started.value.threadId));
  return { h, handle: started.value };
}

describe.each(FLAVOURS)('%s tool() as an awaken tool', (_name, ai) => {
  describe('the descriptor', () => {
    it('a zod inputSchema: id, description and the JSON Schema of its input as parameters', () => {
      const t = aiSdkTool('weather', ai.tool({ description: 'Get the weather', inputSchema: weatherArgs, execute: async () => 'x' }));
      expect(t.descriptor).toEqual({
        id: 'weather',
        name: 'weather',
        description: 'Get the weather',
        parameters: {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: { city: { type: 'string', description: 'the city' }, days: { default: 1, type: 'number', minimum: 1 } },
          required: ['city'],
        },
      });
    });

    it('a jsonSchema() inputSchema: its JSON Schema as given; no description reads as empty', () => {
      const t = aiSdkTool('weather', ai.tool({ inputSchema: jsonWeather(ai), execute: async () => 'x' }));
      expect(t.descriptor).toEqual({ id: 'weather', name: 'weather', description: '', parameters: WEATHER_JSON_SCHEMA });
    });
  });

  describe('arguments', () => {
    it('zod: invalid arguments fail the call as invalid_arguments naming each field; execute is not called', async () => {
      const calls: unknown[] = [];
      const t = aiSdkTool('weather', ai.tool({ inputSchema: weatherArgs, execute: async (input) => void calls.push(input) }));
      const message = 'city: Invalid input: expected string, received number; days: Too small: expected number to be >=1';
      let thrown: unknown;
      try {
        t.validateArgs?.({ city: 3, days: 0 });
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(ToolFailure);
      expect((thrown as ToolFailure).error).toEqual({ code: 'invalid_arguments', message });
      const h = await runOne(t, { city: 3, days: 0 });
      expect(doneOf(h)[0]?.result).toEqual({ tool_name: 'weather', status: 'error', data: null, message: `Invalid arguments: ${message}` });
      expect(calls).toEqual([]);
    });

    it("jsonSchema(): its own validate decides; a failure is invalid_arguments with the validator's message", async () => {
      const calls: unknown[] = [];
      const t = aiSdkTool('weather', ai.tool({ inputSchema: jsonWeather(ai), execute: async (input) => void calls.push(input) }));
      const h = await runOne(t, { town: 'Oslo' });
      expect(doneOf(h)[0]?.result).toEqual({ tool_name: 'weather', status: 'error', data: null, message: 'Invalid arguments: city: expected a string' });
      expect(calls).toEqual([]);
    });

    it('valid arguments: execute gets the parsed input (defaults applied) and {toolCallId, messages, abortSignal}; its output is the result', async () => {
      const seen: unknown[] = [];
      const t = aiSdkTool(
        'weather',
        ai.tool({
          inputSchema: weatherArgs,
          execute: async (input, options) => {
            seen.push({
              input,
              toolCallId: options.toolCallId,
              messages: options.messages,
              signal: options.abortSignal instanceof AbortSignal,
              aborted: options.abortSignal?.aborted,
            });
            return { city: input.city, temperature_c: 10 };
          },
        }),
      );
      const h = await runOne(t, { city: 'Oslo' });
      expect(seen).toEqual([{ input: { city: 'Oslo', days: 1 }, toolCallId: 'c1', messages: [], signal: true, aborted: false }]);
      expect(doneOf(h)[0]?.result).toEqual({ tool_name: 'weather', status: 'success', data: { city: 'Oslo', temperature_c: 10 }, message: null });
      expect(toolMessageIn(h, 1)).toBe('{"city":"Oslo","temperature_c":10}');
    });
  });

  it('an execute that throws fails the call as execution_failed with its message', async () => {
    const t = aiSdkTool(
      'weather',
      ai.tool({
        inputSchema: weatherArgs,
        execute: async (): Promise<string> => {
          throw new Error('the station is down');
        },
      }),
    );
    const h = await runOne(t, { city: 'Oslo' });
    expect(doneOf(h)[0]?.result).toEqual({ tool_name: 'weather', status: 'error', data: null, message: 'Execution failed: the station is down' });
    expect(toolMessageIn(h, 1)).toBe('Execution failed: the station is down');
  });

  it("a cancelled run aborts the tool's abortSignal", async () => {
    let signal: AbortSignal | undefined;
    const t = aiSdkTool(
      'slow',
      ai.tool({
        inputSchema: z.object({}),
        execute: (_input, { abortSignal }) =>
          new Promise<string>((resolve, reject) => {
            signal = abortSignal;
            // Settles on its own too, so a signal that never fires fails the spec rather than hanging it.
            const timer = setTimeout(() => resolve('never aborted'), 2_000);
            abortSignal?.addEventListener('abort', () => {
              clearTimeout(timer);
              reject(new Error('aborted'));
            });
          }),
      }),
    );
    const h = harness(oneCall('slow', {}), { tools: [t] });
    const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
    if (!started.ok) throw new Error('start');
    await waitFor(() => signal !== undefined);
    expect(signal?.aborted).toBe(false);
    started.value.cancel();
    const result = await started.value.done;
    expect(signal?.aborted).toBe(true);
    expect(result.termination).toEqual({ type: 'cancelled' });
  });

  describe('needsApproval', () => {
    const deployArgs = z.object({ target: z.string() });
    const deploy = (needsApproval: AiSdkToolLike['needsApproval'], runs: unknown[]) =>
      aiSdkTool(
        'deploy',
        ai.tool({
          description: 'Deploy',
          inputSchema: deployArgs,
          ...(needsApproval !== undefined ? { needsApproval: needsApproval as never } : {}),
          execute: async ({ target }) => {
            runs.push(target);
            return { deployed: target };
          },
        }),
      );

    it("true: the call suspends exactly as awaken's permission gate asks (the same events, the same AI SDK v6 chunks); execute waits", async () => {
      const runs: unknown[] = [];
      const { h } = await startParked(deploy(true, runs), { target: 'prod' });
      expect(runs).toEqual([]);

      // The same call, asked about by the permission plugin (its default is ask).
      const gated = defineTool({
        id: 'deploy',
        description: 'Deploy',
        args: deployArgs,
        execute: ({ target }) => ToolResults.success('deploy', { deployed: target }),
      });
      const g = harness(oneCall('deploy', { target: 'prod' }), { tools: [gated], plugins: [permissionPlugin] });
      const started = await g.runtime.start({ messages: [Messages.user('go')] }, g.sink);
      if (!started.ok) throw new Error('start');
      await waitFor(() => g.runtime.isWaiting(started.value.threadId));

      expect(doneOf(h)).toEqual(doneOf(g));
      expect(doneOf(h)[0]?.result).toEqual({
        tool_name: 'deploy',
        status: 'pending',
        data: null,
        message: "Tool 'deploy' suspended: awaiting approval",
        suspension: {
          suspension: { id: 'perm_c1', action: 'tool:PermissionConfirm', message: "Permission required for tool 'deploy'", parameters: { target: 'prod' } },
          pending: { id: 'c1', name: 'permission_confirm', arguments: { target: 'prod' } },
          resume_mode: 'replay_tool_call',
        },
      });
      // On the AI SDK v6 wire: the call, then the approval request addressed by the suspension id.
      // (Only the state snapshots differ: the plugin's own state keys are in the gated run's.)
      const wire = (events: readonly AgentEvent[]) => encodeAiSdk(events).filter((c) => !c.type.startsWith('data-state-'));
      expect(wire(h.sink.events)).toEqual(wire(g.sink.events));
      expect(wire(h.sink.events).map((c) => c.type)).toEqual([
        'start',
        'data-run-info',
        'start-step',
        'tool-input-start',
        'tool-input-delta',
        'tool-input-available',
        'data-inference-complete',
        'tool-approval-request',
        'finish-step',
        'finish',
      ]);
      expect(encodeAiSdk(h.sink.events).filter((c) => c.type.startsWith('tool-'))).toEqual([
        { type: 'tool-input-start', toolCallId: 'c1', toolName: 'deploy' },
        { type: 'tool-input-delta', toolCallId: 'c1', inputTextDelta: '{"target":"prod"}' },
        { type: 'tool-input-available', toolCallId: 'c1', toolName: 'deploy', input: { target: 'prod' } },
        { type: 'tool-approval-request', approvalId: 'perm_c1', toolCallId: 'c1' },
      ]);
    });

    it('true, approved (a decision for the approval id): execute runs once; its output answers the call and the model', async () => {
      const runs: unknown[] = [];
      const { h, handle } = await startParked(deploy(true, runs), { target: 'prod' });
      expect(handle.decide([{ targetId: 'perm_c1', decision: { decision_id: 'd', action: 'resume', updated_at: 0 } }]).ok).toBe(true);
      const result = await handle.done;
      expect(result.termination).toEqual({ type: 'natural_end' });
      expect(runs).toEqual(['prod']);
      expect(resumedOf(h)).toEqual([{ event_type: 'tool_call_resumed', target_id: 'c1', result: { deployed: 'prod' } }]);
      expect(toolMessageIn(h, 1)).toBe('{"deployed":"prod"}');
      expect(checkRunInvariants(h.sink.events)).toEqual([]);
    });

    it('true, denied: execute never runs; the client is told it was denied and the model that the user cancelled it', async () => {
      const runs: unknown[] = [];
      const { h, handle } = await startParked(deploy(true, runs), { target: 'prod' });
      expect(handle.decide([{ targetId: 'perm_c1', decision: { decision_id: 'd', action: 'cancel', reason: 'not today', updated_at: 0 } }]).ok).toBe(true);
      await handle.done;
      expect(runs).toEqual([]);
      expect(resumedOf(h)).toEqual([{ event_type: 'tool_call_resumed', target_id: 'c1', result: { approved: false, reason: 'not today' } }]);
      expect(encodeAiSdk(h.sink.events).filter((c) => c.type === 'tool-output-denied')).toEqual([{ type: 'tool-output-denied', toolCallId: 'c1' }]);
      expect(toolMessageIn(h, 1)).toBe('Tool call cancelled: not today');
    });

    it('a function answering false: the call runs at once; the function got the parsed input and {toolCallId, messages}', async () => {
      const runs: unknown[] = [];
      const asked: unknown[] = [];
      const h = await runOne(
        deploy((input: unknown, options: { toolCallId: string; messages: unknown[] }) => {
          asked.push({ input, toolCallId: options.toolCallId, messages: options.messages });
          return false;
        }, runs),
        { target: 'staging' },
      );
      expect(asked).toEqual([{ input: { target: 'staging' }, toolCallId: 'c1', messages: [] }]);
      expect(runs).toEqual(['staging']);
      expect(doneOf(h).map((d) => d.outcome)).toEqual(['succeeded']);
    });

    it('asked at the gate, before the call runs: in a sequential batch the call after one waiting for approval runs; approved, the waiting one runs', async () => {
      const runs: unknown[] = [];
      const noted: string[] = [];
      const note = defineTool({
        id: 'note',
        description: 'Note',
        args: z.object({ text: z.string() }),
        execute: ({ text }) => (noted.push(text), ToolResults.success('note', { noted: text })),
      });
      const calls = [
        { id: 'c1', name: 'deploy', arguments: { target: 'prod' } },
        { id: 'c2', name: 'note', arguments: { text: 'deploying' } },
      ];
      const h = harness([{ tool_calls: calls }, { text: 'ok' }], { tools: [deploy(true, runs), note] });
      const started = await h.runtime.start({ messages: [Messages.user('go')] }, h.sink);
      if (!started.ok) throw new Error(JSON.stringify(started.error));
      await waitFor(() => h.runtime.isWaiting(started.value.threadId));
      expect([runs, noted]).toEqual([[], ['deploying']]);
      expect(doneOf(h).map((d) => [d.id, d.outcome])).toEqual([
        ['c1', 'suspended'],
        ['c2', 'succeeded'],
      ]);
      expect(started.value.decide([{ targetId: 'perm_c1', decision: { decision_id: 'd', action: 'resume', updated_at: 0 } }]).ok).toBe(true);
      expect((await started.value.done).termination).toEqual({ type: 'natural_end' });
      expect([runs, noted]).toEqual([['prod'], ['deploying']]);
      expect(checkRunInvariants(h.sink.events)).toEqual([]);
    });

    it('a wrapper that keeps only the descriptor and execute (no question at the gate): the call still asks, from inside itself, and never runs unapproved', async () => {
      const runs: unknown[] = [];
      const gated = deploy(true, runs);
      expect(gated.askBefore).toBeTypeOf('function');
      const bare: Tool = { descriptor: gated.descriptor, execute: (args, ctx) => gated.execute(args, ctx) };
      const { h, handle } = await startParked(bare, { target: 'prod' });
      expect(runs).toEqual([]);
      expect(doneOf(h).map((d) => [d.outcome, (d.result as { suspension?: { suspension: { id: string } } }).suspension?.suspension.id])).toEqual([
        ['suspended', 'perm_c1'],
      ]);
      handle.decide([{ targetId: 'perm_c1', decision: { decision_id: 'd', action: 'resume', updated_at: 0 } }]);
      await handle.done;
      expect(runs).toEqual(['prod']);
    });

    it('a needsApproval that throws fails the call with its message; execute never runs', async () => {
      const runs: unknown[] = [];
      const h = await runOne(
        deploy(() => {
          throw new Error('approval service down');
        }, runs),
        { target: 'prod' },
      );
      expect(runs).toEqual([]);
      expect(doneOf(h).map((d) => [d.outcome, (d.result as { message?: string }).message])).toEqual([['failed', 'approval service down']]);
    });

    it('an async function answering true: suspended; approved, it runs (asked once); denied, it does not', async () => {
      for (const action of ['resume', 'cancel'] as const) {
        const runs: unknown[] = [];
        let asked = 0;
        const { h, handle } = await startParked(
          deploy(async (input: { target: string }) => {
            asked++;
            return input.target === 'prod';
          }, runs),
          { target: 'prod' },
        );
        expect(doneOf(h).map((d) => d.outcome)).toEqual(['suspended']);
        handle.decide([{ targetId: 'perm_c1', decision: { decision_id: 'd', action, updated_at: 0 } }]);
        await handle.done;
        expect(runs).toEqual(action === 'resume' ? ['prod'] : []);
        expect(asked).toBe(1);
      }
    });
  });

  it('an async generator execute: each yield before the last streams as preliminary output; the last yield is the result', async () => {
    const t = aiSdkTool(
      'forecast',
      ai.tool({
        inputSchema: z.object({ city: z.string() }),
        async *execute({ city }) {
          yield { status: 'loading' as const };
          yield { status: 'halfway' as const, progress: 0.5 };
          yield { status: 'done' as const, city, temperature_c: 10 };
        },
      }),
    );
    const h = await runOne(t, { city: 'Oslo' });
    expect(h.sink.events.filter((e) => e.event_type === 'tool_call_stream_delta')).toEqual([
      { event_type: 'tool_call_stream_delta', id: 'c1', name: 'forecast', delta: '{"status":"loading"}\n' },
      { event_type: 'tool_call_stream_delta', id: 'c1', name: 'forecast', delta: '{"status":"halfway","progress":0.5}\n' },
    ]);
    expect(doneOf(h)[0]?.result).toEqual({
      tool_name: 'forecast',
      status: 'success',
      data: { status: 'done', city: 'Oslo', temperature_c: 10 },
      message: null,
    });
    expect(encodeAiSdk(h.sink.events).filter((c) => c.type === 'tool-output-available')).toEqual([
      { type: 'tool-output-available', toolCallId: 'c1', output: '{"status":"loading"}\n', preliminary: true },
      { type: 'tool-output-available', toolCallId: 'c1', output: '{"status":"loading"}\n{"status":"halfway","progress":0.5}\n', preliminary: true },
      { type: 'tool-output-available', toolCallId: 'c1', output: { status: 'done', city: 'Oslo', temperature_c: 10 } },
    ]);
    expect(toolMessageIn(h, 1)).toBe('{"status":"done","city":"Oslo","temperature_c":10}');
  });

  describe('toModelOutput: what the model is sent; the client still gets the raw output', () => {
    const output = { city: 'Oslo', temperature_c: 10 };
    it.each([
      ['text', { type: 'text', value: 'It is 10 °C in Oslo.' }, 'success', 'It is 10 °C in Oslo.'],
      ['json', { type: 'json', value: { t: 10 } }, 'success', '{"t":10}'],
      ['error-text', { type: 'error-text', value: 'the station is down' }, 'error', 'the station is down'],
      ['error-json', { type: 'error-json', value: { down: true } }, 'error', '{"down":true}'],
      [
        'content',
        {
          type: 'content',
          value: [
            { type: 'text', text: 'Oslo:' },
            { type: 'text', text: '10 °C' },
          ],
        },
        'success',
        'Oslo:\n10 °C',
      ],
      ['execution-denied', { type: 'execution-denied', reason: 'no station' }, 'error', 'Tool execution denied: no station'],
    ] as const)('%s', async (_type, modelOutput, status, seen) => {
      const got: unknown[] = [];
      const t = aiSdkTool(
        'weather',
        ai.tool({
          inputSchema: weatherArgs,
          execute: async () => output,
          toModelOutput: (o) => {
            got.push(o);
            return modelOutput as never;
          },
        }),
      );
      const h = await runOne(t, { city: 'Oslo' });
      expect(got).toEqual([{ toolCallId: 'c1', input: { city: 'Oslo', days: 1 }, output }]);
      expect(toolMessageIn(h, 1)).toBe(seen);
      expect(doneOf(h)[0]?.result).toEqual({ tool_name: 'weather', status, data: output, message: seen });
      const chunk = encodeAiSdk(h.sink.events).find((c) => c.type === 'tool-output-available' || c.type === 'tool-output-error');
      expect(chunk).toEqual(
        status === 'success' ? { type: 'tool-output-available', toolCallId: 'c1', output } : { type: 'tool-output-error', toolCallId: 'c1', errorText: seen },
      );
    });
  });

  it('a tool without execute is one the client runs: offered with its schema, its call waits for the client, bad input fails here', async () => {
    // Read as an app loader reads it: an unknown value, recognised first.
    const t: unknown = ai.tool({ description: 'Ask the user for a color', inputSchema: z.object({ palette: z.string() }) });
    if (!isAiSdkTool(t)) throw new Error('not recognised');
    const tool = aiSdkTool('pick_color', t);
    expect(tool.descriptor).toMatchObject({ id: 'pick_color', name: 'pick_color', description: 'Ask the user for a color' });
    expect(tool.descriptor.parameters).toMatchObject({ type: 'object', properties: { palette: { type: 'string' } }, required: ['palette'] });
    expect(() => tool.validateArgs?.({ palette: 3 })).toThrow(ToolFailure);
    const result = await tool.execute({ palette: 'warm' }, { callId: 'c1', toolName: 'pick_color' } as never);
    expect(result).toMatchObject({
      status: 'pending',
      suspension: { suspension: { id: 'c1', action: 'client_tool' }, resume_mode: 'use_decision_as_tool_result' },
    });
  });

  it('a provider’s own tool, or a client’s tool that asks for approval, is refused naming the field', () => {
    const refusal = (t: unknown): string | undefined => {
      try {
        aiSdkTool('x', t as AiSdkToolLike);
      } catch (e) {
        return e instanceof Error ? e.message : String(e);
      }
      return undefined;
    };
    expect(refusal({ type: 'provider', id: 'openai.web_search', inputSchema: z.object({}), args: {} })).toBe(
      "type: a provider's own tool (its provider runs it) is not supported: give a tool with execute, or one the client runs",
    );
    expect(refusal(ai.tool({ inputSchema: z.object({}), needsApproval: true }))).toBe(
      'needsApproval: a tool the client runs (no execute) asks its user itself; the server asks nothing of it',
    );
  });

  it('isAiSdkTool: an object with an inputSchema and no awaken descriptor', () => {
    expect(isAiSdkTool(ai.tool({ inputSchema: z.object({}), execute: async () => 1 }))).toBe(true);
    expect(isAiSdkTool(ai.tool({ inputSchema: jsonWeather(ai) }))).toBe(true);
    const awaken = defineTool({ id: 'x', description: 'x', args: z.object({}), execute: () => ToolResults.success('x', null) });
    expect(isAiSdkTool(awaken)).toBe(false);
    expect(isAiSdkTool({ ...awaken, inputSchema: z.object({}) })).toBe(false);
    for (const x of [null, undefined, 'tool', 3, {}, { execute: () => 1 }]) expect(isAiSdkTool(x)).toBe(false);
  });
});

describe('what aiSdkTool refuses to read', () => {
  const refused: readonly (readonly [string, unknown, string])[] = [
    ['an inputSchema of no kind it knows', { inputSchema: 42, execute: () => 1 }, 'inputSchema: not a zod schema, a Standard Schema or jsonSchema()'],
    [
      'a JSON Schema given as a promise',
      { inputSchema: ai6.jsonSchema(Promise.resolve({ type: 'object' as const })), execute: () => 1 },
      'inputSchema: a JSON Schema given as a promise is not supported',
    ],
    [
      'a Standard Schema with no JSON Schema',
      { inputSchema: { '~standard': { version: 1, vendor: 'valibot', validate: (value: unknown) => ({ value }) } }, execute: () => 1 },
      "inputSchema: a valibot schema with no JSON Schema of its own is not supported (use zod 4 or the AI SDK's jsonSchema())",
    ],
    [
      'a description made by a function (ai@7 context)',
      { description: () => 'd', inputSchema: z.object({}), execute: () => 1 },
      'description: a description made by a function is not supported (give a string)',
    ],
  ];
  it.each(refused)('%s', (_what, t, message) => {
    let got: string | undefined;
    try {
      aiSdkTool('t', t as AiSdkToolLike);
    } catch (e) {
      got = e instanceof Error ? e.message : String(e);
    }
    expect(got).toBe(message);
  });
});

describe.each(FLAVOURS)("%s's own chat (AbstractChat + DefaultChatTransport) against awaken's AI SDK route, with tool() tools", (_name, ai) => {
  it('streams a generator tool, asks for approval, runs the approved call, and leaves the denied one alone', async () => {
    const runs: string[] = [];
    const deploy = ai.tool({
      description: 'Deploy',
      inputSchema: z.object({ target: z.string() }),
      needsApproval: true,
      execute: async ({ target }) => {
        runs.push(target);
        return { deployed: target };
      },
    });
    const forecast = ai.tool({
      inputSchema: z.object({ city: z.string() }),
      async *execute({ city }) {
        yield { status: 'loading' };
        yield { status: 'done', city };
      },
    });
    const s = testServer(
      [
        { tool_calls: [{ id: 'c1', name: 'forecast', arguments: { city: 'Oslo' } }] },
        { text: 'Sunny.' },
        { tool_calls: [{ id: 'c2', name: 'deploy', arguments: { target: 'prod' } }] },
        { text: 'Deployed.' },
        { tool_calls: [{ id: 'c3', name: 'deploy', arguments: { target: 'staging' } }] },
        { text: 'Left it.' },
      ],
      { tools: [aiSdkTool('deploy', deploy), aiSdkTool('forecast', forecast)] },
    );
    const inProcess: typeof fetch = (input, init) => Promise.resolve(s.app.request(input instanceof Request ? input : String(input), init));
    class Chat extends ai.AbstractChat<UIMessage> {
      constructor() {
        super({
          id: 'chat-tools',
          transport: new ai.DefaultChatTransport<UIMessage>({ api: 'http://awaken.test/v1/ai-sdk/chat', fetch: inProcess }),
          state: new State(),
          sendAutomaticallyWhen: ai.lastAssistantMessageIsCompleteWithApprovalResponses,
        });
      }
    }
    type Part = { type: string; toolCallId?: string; state?: string; output?: unknown; approval?: { id: string } };
    const chat = new Chat();
    const part = (id: string) => (chat.lastMessage?.parts as Part[] | undefined)?.find((p) => p.toolCallId === id);
    const text = () => (chat.lastMessage?.parts ?? []).flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
    try {
      await chat.sendMessage({ text: 'weather?' });
      expect(chat.error).toBeUndefined();
      expect(part('c1')).toMatchObject({ type: 'tool-forecast', state: 'output-available', output: { status: 'done', city: 'Oslo' } });
      expect(text()).toBe('Sunny.');

      await chat.sendMessage({ text: 'deploy to prod' });
      expect(part('c2')).toMatchObject({ type: 'tool-deploy', state: 'approval-requested', approval: { id: 'perm_c2' } });
      expect(runs).toEqual([]);
      await chat.addToolApprovalResponse({ id: 'perm_c2', approved: true });
      await expect.poll(() => chat.status, { timeout: 5000 }).toBe('ready');
      expect(chat.error).toBeUndefined();
      expect(part('c2')).toMatchObject({ type: 'tool-deploy', state: 'output-available', output: { deployed: 'prod' } });
      expect(text()).toContain('Deployed.');

      await chat.sendMessage({ text: 'deploy to staging' });
      expect(part('c3')?.state).toBe('approval-requested');
      await chat.addToolApprovalResponse({ id: 'perm_c3', approved: false, reason: 'not today' });
      await expect.poll(() => chat.status, { timeout: 5000 }).toBe('ready');
      expect(chat.error).toBeUndefined();
      expect(part('c3')).toMatchObject({ type: 'tool-deploy', state: 'output-denied' });
      expect(text()).toContain('Left it.');
      expect(runs).toEqual(['prod']);
      const told = s.llm.requests
        .at(-1)
        ?.messages.filter((m) => m.role === 'tool')
        .map((m) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join(''));
      expect(told?.at(-1)).toBe('Tool call cancelled: not today');
    } finally {
      await s.registry.shutdown({ graceMs: 1_000 });
    }
  });
});
