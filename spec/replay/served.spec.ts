import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { pluginFactory } from '../../src/app/define.ts';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { defineStateKey } from '../../src/core/state/state-key.ts';
import { PLUGIN_CATALOG } from '../../src/plugins/catalog.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { ServedRecorder, transcriptFileName, transcriptIdsOf, type ServedRecorderOptions } from '../../src/replay/served.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';
import { defineTool, type Tool } from '../../src/runtime/tool.ts';
import { RunRegistry } from '../../src/server/run-registry.ts';
import { MemoryStore } from '../../src/stores/memory.ts';
import { echoTool } from '../support/runtime.ts';

/**
 * The name a served run's transcript is written under (`DIR/<thread>--<run>.jsonl`): one per thread
 * and run, distinct even where a file system ignores case, a plain name in the directory whatever
 * the ids hold, short enough for any file system, and — while the ids fit — read back to them. The
 * name is for people reading the directory; the inspector reads a transcript's thread and owner
 * from its header.
 */
const id = fc.oneof(
  fc.string({ minLength: 1, maxLength: 40 }),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }),
  fc.constantFrom('user:42', 'team:alpha', 'team_alpha', 'x--secret', '..%2F..%2Fetc', '..', '.', 'A', 'a', 'Ä', 'ä', '--', '~', '~7e'),
);
const anyLength = fc.oneof(id, fc.string({ minLength: 100, maxLength: 400 }), fc.constant('t'.repeat(300)));
const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

describe('transcriptFileName', () => {
  it('property: a plain file name of at most 200 bytes, ending .jsonl, whatever the ids', () => {
    fc.assert(
      fc.property(anyLength, anyLength, (thread, run) => {
        const name = transcriptFileName(thread, run);
        expect(name).toMatch(/^[a-z0-9_~-]+\.jsonl$/);
        expect(name.startsWith('.')).toBe(false);
        expect(bytes(name)).toBeLessThanOrEqual(200);
      }),
      { numRuns: 500 },
    );
  });

  it('property: reversible while the ids fit (ids of up to 13 UTF-16 units always do; a shortened name is marked `~~`)', () => {
    fc.assert(
      fc.property(id, id, (thread, run) => {
        const name = transcriptFileName(thread, run);
        if (thread.length <= 13 && run.length <= 13) expect(name).not.toContain('~~');
        fc.pre(!name.includes('~~'));
        expect(transcriptIdsOf(name)).toEqual({ threadId: thread, runId: run });
      }),
      { numRuns: 500 },
    );
  });

  it('property: distinct ids give names that differ even case-insensitively, however long', () => {
    fc.assert(
      fc.property(anyLength, anyLength, id, (a, b, run) => {
        fc.pre(a !== b);
        expect(transcriptFileName(a, run).toLowerCase()).not.toBe(transcriptFileName(b, run).toLowerCase());
      }),
      { numRuns: 500 },
    );
  });

  it('examples: `:`, `-`, `.` and upper case are written as escapes (`~` and the UTF-16 code unit in hex), so `team:alpha`, `team_alpha`, `Team` and `team` are four names', () => {
    expect(transcriptFileName('team:alpha', 'r1')).toBe('team~3aalpha--r1.jsonl');
    expect(transcriptFileName('team_alpha', 'r1')).toBe('team_alpha--r1.jsonl');
    expect(transcriptFileName('Team', 'r1')).toBe('~54eam--r1.jsonl');
    expect(transcriptFileName('x--secret', 'r1')).toBe('x~2d~2dsecret--r1.jsonl');
    expect(transcriptFileName('..%2F..%2Fetc', 'r1')).toBe('~2e~2e~252~46~2e~2e~252~46etc--r1.jsonl');
    // Too long to be written whole: its start, then a digest of all of it (not read back; the header has it).
    const long = transcriptFileName('t'.repeat(300), 'r1');
    expect(long).toMatch(/^t+~~[0-9a-f]{32}--r1\.jsonl$/);
    expect(transcriptIdsOf(long)).toBeUndefined();
    expect(transcriptIdsOf('team_alpha--r1.jsonl')).toEqual({ threadId: 'team_alpha', runId: 'r1' });
    expect(transcriptIdsOf('x--secret--r1.jsonl')).toBeUndefined();
  });
});

/**
 * What a served run's header says of its plugins and app: read when the run starts, so that a
 * transcript names the code that ran even when the app is loaded again while the run goes on.
 */
describe('ServedRecorder: the plugins and the app of a served run', () => {
  const Labels = defineStateKey({ key: 'tagger.labels', init: (): string[] => [], apply: (v: string[], u: string) => [...v, u], codec: z.array(z.string()) });
  const tagger = pluginFactory('tagger', (config: { label: string; token: string }) => ({
    name: 'tagger',
    register: (r) => {
      r.registerKey(Labels, { scope: 'run' });
      r.registerPhaseHook('after_tool_execute', () => StateCommand.empty().update(Labels, config.label));
    },
  }));
  const plain: RuntimePlugin = { name: 'plain', register: () => undefined };
  /** Registered in the runtime but neither in the catalog nor in the app's plugins: not in a header. */
  const extra: RuntimePlugin = { name: 'extra', register: () => undefined };

  /** One served run whose tool waits for `release`: what the app is when the run ends is not what it was when it started. */
  async function servedRun(
    options: Partial<ServedRecorderOptions>,
    pluginIds: readonly string[],
    whileRunning: (recorder: ServedRecorder) => void = () => undefined,
  ): Promise<string> {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-served-plugins-'));
    const recorder = new ServedRecorder({ dir, models: { m: { provider: 'p', model_name: 'pm' } }, tools: [echoTool.descriptor, gate.descriptor], ...options });
    let release = (): void => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let entered = (): void => undefined;
    const inTool = new Promise<void>((resolve) => (entered = resolve));
    const gated: Tool = { descriptor: gate.descriptor, execute: async (args, ctx) => (entered(), await released, gate.execute(args, ctx)) };
    const built = new AgentRuntimeBuilder()
      .withEnv(recorder.env(deterministicEnv()))
      .withProvider('p', recorder.llm(new ScriptedLlm([{ tool_calls: [{ id: 'c1', name: 'gate', arguments: {} }] }, { text: 'done' }])))
      .withModel('m', { provider: 'p', model_name: 'pm' })
      .withAgentSpec({ id: 'a', model: 'm', system_prompt: 'be brief', plugin_ids: [...pluginIds] })
      .withTool(recorder.tool(echoTool))
      .withTool(recorder.tool(gated))
      .withPlugin('reminder', PLUGIN_CATALOG.get('reminder') as RuntimePlugin)
      .withPlugin('tagger', tagger({ label: 'first', token: 'tok-1' }))
      .withPlugin('plain', plain)
      .withPlugin('extra', extra)
      .build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    recorder.attach(built.value);
    const run = { threadId: 't1', runId: 'r1', agentId: 'a', messages: [Messages.user('hi')] };
    const started = await recorder.observe(run, (sink) => built.value.start(run, sink), { emit: () => undefined });
    if (!started.ok) throw new Error(JSON.stringify(started.error));
    await inTool;
    whileRunning(recorder);
    release();
    await started.value.done;
    const file = join(dir, transcriptFileName('t1', 'r1'));
    await vi.waitFor(() => expect(existsSync(file)).toBe(true));
    return readFileSync(file, 'utf8');
  }
  const gate: Tool = defineTool({ id: 'gate', description: 'Waits', args: z.object({}), execute: () => ToolResults.success('gate', {}) });
  const headerOf = (t: string): Record<string, unknown> => JSON.parse(t.split('\n')[0] as string) as Record<string, unknown>;

  it("the agent's plugins that are in the catalog or the app's, app ones with their origin, and the app — as they were when the run started", async () => {
    let plugins = new Map<string, RuntimePlugin>([
      ['tagger', tagger({ label: 'first', token: 'tok-1' })],
      ['plain', plain],
    ]);
    let app: { file: string; version: string } | undefined = { file: 'app.ts', version: '1' };
    const text = await servedRun({ plugins: () => plugins, app: () => app }, ['reminder', 'tagger', 'plain'], (recorder) => {
      // The app loaded again mid-run: the run goes on with the code it started with.
      plugins = new Map([['tagger', tagger({ label: 'second', token: 'tok-2' })]]);
      app = { file: 'app.ts', version: '2' };
      const reloaded = new AgentRuntimeBuilder()
        .withProvider('p', new ScriptedLlm([]))
        .withModel('m', { provider: 'p', model_name: 'pm' })
        .withAgentSpec({ id: 'a', model: 'm', system_prompt: 'reloaded' })
        .build();
      if (!reloaded.ok) throw new Error(JSON.stringify(reloaded.error));
      recorder.attach(reloaded.value);
    });
    const header = headerOf(text);
    expect(header['agent']).toMatchObject({ system_prompt: 'be brief', plugin_ids: ['reminder', 'tagger', 'plain'] });
    expect(header['plugins']).toEqual([
      { id: 'reminder' },
      { id: 'tagger', factory: 'tagger', config: { label: 'first', token: '<redacted>' } },
      { id: 'plain' },
    ]);
    expect(header['app']).toEqual({ file: 'app.ts', version: '1' });
    expect(text).not.toContain('tok-1');
    const report = await replayTranscript(text, { app: { plugins: [tagger({ label: 'second', token: 'tok-2' }), plain] } });
    expect(report.divergence).toBeUndefined();
    expect(report.identical).toBe(true);
  });

  it("a plugin the agent names that is neither in the catalog nor among the app's is not listed; without those options, the catalog plugins alone and no app (as before)", async () => {
    const mine = headerOf(await servedRun({ plugins: () => new Map([['plain', plain]]) }, ['reminder', 'plain', 'extra']));
    expect(mine['plugins']).toEqual([{ id: 'reminder' }, { id: 'plain' }]);
    expect(mine['app']).toBeUndefined();
    const header = headerOf(await servedRun({}, ['reminder', 'tagger', 'plain', 'extra']));
    expect(header['plugins']).toEqual([{ id: 'reminder' }]);
    expect(header['app']).toBeUndefined();
  });
});

/**
 * A registry serving one agent of `tool` on the model `script`, every run recorded into a folder of
 * its own; `transcript()` is the first file written there, once written.
 */
function served(tool: Tool, script: readonly ScriptStep[]) {
  const dir = mkdtempSync(join(tmpdir(), 'served-'));
  const recorder = new ServedRecorder({ dir, models: { m: { provider: 'p', model_name: 'pm' } }, tools: [tool.descriptor] });
  const built = new AgentRuntimeBuilder()
    .withEnv(recorder.env(deterministicEnv({ tick: 1 })))
    .withThreadRunStore(recorder.store(new MemoryStore()))
    .withProvider('p', recorder.llm(new ScriptedLlm(script)))
    .withModel('m', { provider: 'p', model_name: 'pm' })
    .withAgentSpec({ id: 'a', model: 'm' })
    .withTool(recorder.tool(tool))
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  recorder.attach(built.value);
  const registry = new RunRegistry(built.value, new MemoryStore(), { observer: recorder });
  const transcript = async (): Promise<string> => {
    const file = await vi.waitFor(() => {
      const found = readdirSync(dir).find((f) => f.endsWith('.jsonl'));
      expect(found).toBeDefined();
      return join(dir, found as string);
    });
    await registry.shutdown();
    return readFileSync(file, 'utf8');
  };
  return { registry, transcript };
}

describe('a served cancel, sent while the run goes on', () => {
  it.each([3, 8, 20])('after a decision and %i promise turns: written where it came, it replays identical', async (turns) => {
    const approve = defineTool({
      id: 'approve',
      description: 'needs a decision',
      args: z.object({}),
      execute: (_args, ctx) =>
        ctx.resume !== undefined
          ? ToolResults.success('approve', 'ok')
          : ToolResults.suspended('approve', 'needs approval', {
              suspension: { id: `s-${ctx.callId}`, action: 'confirm', message: 'ok?' },
              pending: { id: ctx.callId, name: 'approve', arguments: {} },
              resume_mode: 'replay_tool_call',
            }),
    });
    const { registry, transcript } = served(approve, [{ tool_calls: [{ id: 'c1', name: 'approve', arguments: {} }] }, { text: 'done' }]);
    expect((await registry.start({ threadId: 't1', messages: [Messages.user('go')] })).ok).toBe(true);
    await vi.waitFor(() => expect(registry.waiting('t1')).toBeDefined());
    expect(registry.decide('t1', [{ targetId: 'c1', decision: { action: 'resume', decision_id: 'd1', updated_at: 5 } }]).ok).toBe(true);
    for (let k = 0; k < turns; k++) await Promise.resolve();
    expect(registry.cancel('t1').ok).toBe(true);
    const text = await transcript();
    expect(text).toContain('{"type":"cancel"');
    expect(await replayTranscript(text)).toMatchObject({ identical: true });
  });
});

describe('a served call with arguments its tool refuses', () => {
  it('is recorded with its refusal, as recordRun records one, and replays identical', async () => {
    const strict = defineTool({
      id: 'strict',
      description: 'takes no arguments',
      args: z.object({}).strict(),
      execute: () => ToolResults.success('strict', 'ok'),
    });
    const { registry, transcript } = served(strict, [{ tool_calls: [{ id: 'c1', name: 'strict', arguments: { bad: 1 } }] }, { text: 'done' }]);
    const started = await registry.start({ threadId: 't1', messages: [Messages.user('go')] });
    if (!started.ok) throw new Error(JSON.stringify(started.error));
    await started.value.done;
    const text = await transcript();
    const outcome = text.split('\n').find((l) => l.startsWith('{"type":"tool"'));
    expect(JSON.parse(outcome as string)).toMatchObject({ call_id: 'c1', arguments: { bad: 1 }, tool_error: { code: 'invalid_arguments' } });
    expect(await replayTranscript(text)).toMatchObject({ identical: true });
  });
});
