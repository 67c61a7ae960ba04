import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { decisionFor } from '../../src/contract/decision.ts';
import { Messages } from '../../src/contract/message.ts';
import type { ToolDescriptor } from '../../src/contract/tool.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { recordRun, type RecordingSetup } from '../../src/replay/recorder.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { ServedRecorder, transcriptFileName } from '../../src/replay/served.ts';
import { TRANSCRIPT_FORMAT } from '../../src/replay/transcript.ts';
import { AgentRuntime, AgentRuntimeBuilder, type RunRequest } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { echoTool } from '../support/runtime.ts';

/**
 * What a run's client brought besides messages — the tools it runs, its state, its context — is kept
 * in the transcript's header (format 10) exactly when the run had it, and a replay gives it back to
 * the run: a run whose client tool was offered and called replays identical, offering it again.
 */

const pickColor: ToolDescriptor = {
  id: 'pick_color',
  name: 'pick_color',
  description: 'Asks the user to pick a colour in the page',
  parameters: { type: 'object', properties: { palette: { type: 'string' } }, required: ['palette'] },
};
const client = {
  clientTools: [pickColor],
  clientState: { theme: 'dark', cart: { items: 2 } },
  clientContext: [
    { description: 'the page the user is on', value: 'checkout' },
    { description: 'the user', value: 'Ada' },
  ],
} as const satisfies Pick<RunRequest, 'clientTools' | 'clientState' | 'clientContext'>;
/** The agent shares the keys of the client's state with its clients (`AgentSpec.client_state`): a run is given them only then. */
const agent = { id: 'a', model: 'm', system_prompt: 'be brief', client_state: ['theme', 'cart'] };
const script: ScriptStep[] = [{ tool_calls: [{ id: 'c1', name: 'pick_color', arguments: { palette: 'warm' } }] }, { text: 'You picked red.' }];

function setup(request: RecordingSetup['request']): RecordingSetup {
  return {
    agent,
    models: { m: { provider: 'p', model_name: 'pm' } },
    providers: { p: new ScriptedLlm(script) },
    tools: [echoTool],
    env: { env: deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, seed: 42, tick: 0 } },
    request,
    decide: (ids) => ids.map((id) => decisionFor(id, 'resume', 1_700_000_000_000, { decisionId: `d-${id}`, result: { color: 'red' } })),
  };
}

const lines = (t: string): string[] => t.trimEnd().split('\n');
const headerOf = (t: string) => JSON.parse(lines(t)[0] as string) as { format: string; request: Record<string, unknown> };
/** The tools each inference was offered, where they changed (an `llm` record writes them only then). */
const llmTools = (t: string): string[][] =>
  lines(t)
    .filter((l) => l.startsWith('{"type":"llm"'))
    .flatMap((l) => {
      const tools = (JSON.parse(l) as { request: { tools?: { id: string }[] } }).request.tools;
      return tools === undefined ? [] : [tools.map((d) => d.id)];
    });
/** The requests the replay starts its run with. */
function startsOf(spy: { mock: { calls: unknown[][] } }): RunRequest[] {
  return spy.mock.calls.map((c) => c[0] as RunRequest);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('transcript format 10: what a client brought besides messages', () => {
  it('recordRun writes the client tools, state and context in the header, after the messages; the replay gives them back and is identical', async () => {
    const { transcript, result } = await recordRun(setup({ messages: [Messages.user('pick a colour')], ...client }));
    expect(result.termination).toEqual({ type: 'natural_end' });
    const header = headerOf(transcript);
    expect(header.format).toBe(TRANSCRIPT_FORMAT);
    expect(TRANSCRIPT_FORMAT).toBe('awaken-transcript/12');
    expect(Object.keys(header.request)).toEqual(['agent_id', 'messages', 'client_tools', 'client_state', 'client_context']);
    expect(header.request).toMatchObject({ client_tools: [pickColor], client_state: client.clientState, client_context: client.clientContext });
    // The client's tool was offered after the agent's own; called, it parked the run for the client's result.
    expect(llmTools(transcript)).toEqual([['echo', 'pick_color']]);
    expect(transcript).toContain('"action":"client_tool"');
    expect(lines(transcript).filter((l) => l.startsWith('{"type":"tool"'))).toEqual([]);

    const start = vi.spyOn(AgentRuntime.prototype, 'start');
    const report = await replayTranscript(transcript);
    expect(report.divergence).toBeUndefined();
    expect(report.firstDifference).toBeUndefined();
    expect(report.identical).toBe(true);
    expect(startsOf(start)).toEqual([
      expect.objectContaining({ clientTools: [pickColor], clientState: client.clientState, clientContext: client.clientContext }),
    ]);
  });

  it('each one alone is written alone, and a run without them writes none of the keys nor gives the run any', async () => {
    for (const [field, key] of [
      ['clientTools', 'client_tools'],
      ['clientState', 'client_state'],
      ['clientContext', 'client_context'],
    ] as const) {
      const { transcript } = await recordRun(setup({ messages: [Messages.user('pick a colour')], [field]: client[field] }));
      expect(Object.keys(headerOf(transcript).request)).toEqual(['agent_id', 'messages', key]);
      const start = vi.spyOn(AgentRuntime.prototype, 'start');
      expect(await replayTranscript(transcript)).toMatchObject({ identical: true });
      const [request] = startsOf(start);
      expect(Object.keys(request ?? {}).filter((k) => k.startsWith('client'))).toEqual([field]);
      start.mockRestore();
    }
    const plain = await recordRun({ ...setup({ messages: [Messages.user('hi')] }), providers: { p: new ScriptedLlm([{ text: 'hello' }]) } });
    expect(Object.keys(headerOf(plain.transcript).request)).toEqual(['agent_id', 'messages']);
    const start = vi.spyOn(AgentRuntime.prototype, 'start');
    expect(await replayTranscript(plain.transcript)).toMatchObject({ identical: true });
    expect(Object.keys(startsOf(start)[0] ?? {}).filter((k) => k.startsWith('client'))).toEqual([]);
  });

  it('the replay offers the tools its header names: without them the model is offered other tools, and the replay says where', async () => {
    const { transcript } = await recordRun(setup({ messages: [Messages.user('pick a colour')], ...client }));
    const [head, ...rest] = lines(transcript);
    const header = JSON.parse(head as string) as { request: Record<string, unknown> };
    const { client_tools: _tools, ...request } = header.request;
    const without = `${[JSON.stringify({ ...header, request }), ...rest].join('\n')}\n`;
    const report = await replayTranscript(without);
    expect(report.identical).toBe(false);
    expect(report.divergence).toMatchObject({ port: 'llm', message: expect.stringContaining('request #1 no longer matches the recording') });
    // Another tool in its place is another request too.
    const renamed = `${[JSON.stringify({ ...header, request: { ...header.request, client_tools: [{ ...pickColor, description: 'Another picker' }] } }), ...rest].join('\n')}\n`;
    expect(await replayTranscript(renamed)).toMatchObject({ identical: false, divergence: { port: 'llm' } });
  });

  it('a header whose client fields are not of their shape is reported at line 1', async () => {
    const { transcript } = await recordRun(setup({ messages: [Messages.user('pick a colour')], ...client }));
    const [head, ...rest] = lines(transcript);
    const header = JSON.parse(head as string) as { request: Record<string, unknown> };
    for (const odd of [{ client_state: ['dark'] }, { client_context: [{ description: 'page' }] }, { client_tools: [{ id: 'x' }] }]) {
      const edited = `${[JSON.stringify({ ...header, request: { ...header.request, ...odd } }), ...rest].join('\n')}\n`;
      expect(await replayTranscript(edited)).toMatchObject({
        identical: false,
        divergence: { port: 'transcript', line: 1 },
        at: { line: 1, record: 'header' },
      });
    }
  });

  it('a served run: the recorder writes what the observed run brought, and its transcript replays identical with it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-served-client-'));
    const recorder = new ServedRecorder({ dir, models: { m: { provider: 'p', model_name: 'pm' } }, tools: [echoTool.descriptor] });
    const built = new AgentRuntimeBuilder()
      .withEnv(recorder.env(deterministicEnv()))
      .withThreadRunStore(recorder.store(new MemoryStore()))
      .withProvider('p', recorder.llm(new ScriptedLlm(script)))
      .withModel('m', { provider: 'p', model_name: 'pm' })
      .withAgentSpec(agent)
      .withTool(recorder.tool(echoTool))
      .build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    recorder.attach(built.value);
    const run = { threadId: 't1', runId: 'r1', agentId: 'a', messages: [Messages.user('pick a colour')], ...client };
    const started = await recorder.observe(run, (sink) => built.value.start(run, sink), { emit: () => undefined });
    if (!started.ok) throw new Error(JSON.stringify(started.error));
    expect(await started.value.parked()).toBe(true);
    expect(started.value.decide([decisionFor('c1', 'resume', 5, { decisionId: 'd1', result: { color: 'red' } })]).ok).toBe(true);
    expect((await started.value.done).response).toBe('You picked red.');
    const file = join(dir, transcriptFileName('t1', 'r1'));
    await vi.waitFor(() => expect(existsSync(file)).toBe(true));
    const text = readFileSync(file, 'utf8');
    const header = headerOf(text);
    expect(header.format).toBe(TRANSCRIPT_FORMAT);
    expect(Object.keys(header.request)).toEqual(['thread_id', 'run_id', 'agent_id', 'messages', 'client_tools', 'client_state', 'client_context', 'history']);
    expect(header.request).toMatchObject({ client_tools: [pickColor], client_state: client.clientState, client_context: client.clientContext });
    expect(llmTools(text)[0]).toEqual(['echo', 'pick_color']);

    const start = vi.spyOn(AgentRuntime.prototype, 'start');
    const report = await replayTranscript(text);
    expect(report.divergence).toBeUndefined();
    expect(report.identical).toBe(true);
    expect(startsOf(start)).toEqual([
      expect.objectContaining({ threadId: 't1', runId: 'r1', clientTools: [pickColor], clientState: client.clientState, clientContext: client.clientContext }),
    ]);
  });
});
