import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { pluginFactory, PluginConfigError } from '../../src/app/define.ts';
import type { JsonValue } from '../../src/contract/json.ts';
import { Messages } from '../../src/contract/message.ts';
import type { StopPolicy } from '../../src/core/policies/stop-policy.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { defineStateKey } from '../../src/core/state/state-key.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { fillRedacted, redactedConfig } from '../../src/replay/plugins.ts';
import { recordRun, type RecordingSetup } from '../../src/replay/recorder.ts';
import { missingCode, replayTranscript } from '../../src/replay/replayer.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';
import { echoTool } from '../support/runtime.ts';

/**
 * Plugins of an app in a transcript: a catalog plugin by id, an app plugin made by a factory as its
 * factory and config (credentials redacted), any other app plugin by id; a replay makes each again
 * from the code it is given, and says which one it lacks.
 */
const Labels = defineStateKey({ key: 'tagger.labels', init: (): string[] => [], apply: (v: string[], u: string) => [...v, u], codec: z.array(z.string()) });
type TaggerConfig = { label: string; apiKey: string; note: string };
const taggerPlugin = (label: string, name = 'tagger'): RuntimePlugin => ({
  name,
  register: (r) => {
    r.registerKey(Labels, { scope: 'run' });
    r.registerPhaseHook('after_tool_execute', () => StateCommand.empty().update(Labels, label));
  },
});
/** The factory as the app that recorded had it; `suffix` stands for its code changed since. */
const tagger = (suffix = '', seen: JsonValue[] = []) =>
  pluginFactory('tagger', (config: TaggerConfig) => {
    seen.push(config);
    return taggerPlugin(`${config.label}${suffix}`);
  });
const plain: RuntimePlugin = { name: 'plain', register: () => undefined };
const never: StopPolicy = { id: 'never', evaluate: () => ({ stop: false }) };

const toolScript: ScriptStep[] = [{ tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }];
function setup(extra: Partial<RecordingSetup> = {}): RecordingSetup {
  return {
    agent: { id: 'a', model: 'm', system_prompt: 'be brief', plugin_ids: ['reminder', 'tagger', 'plain'] },
    models: { m: { provider: 'p', model_name: 'pm' } },
    providers: { p: new ScriptedLlm(toolScript) },
    tools: [echoTool],
    env: { env: deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, tick: 0 } },
    request: { messages: [Messages.user('hi')] },
    plugins: ['reminder', tagger()({ label: 'a', apiKey: 'sk-then', note: 'n' }), plain],
    ...extra,
  };
}
const headerOf = (t: string): Record<string, unknown> => JSON.parse(t.split('\n')[0] as string) as Record<string, unknown>;

describe('credentials in a plugin config', () => {
  it('every value under a key naming a credential is "<redacted>", at any depth; nothing else changes', () => {
    const config: JsonValue = {
      label: 'a',
      apiKey: 'sk-1',
      API_KEY: 'sk-2',
      'api-key': 'sk-3',
      clientSecret: { nested: 'whole value' },
      auth: { Authorization: 'Bearer x', user: 'me', list: [{ accessToken: 't' }, 1, 'token'] },
      passwd: 7,
      db_password: null,
      credentials: ['a', 'b'],
      tokens_used: 3,
      max_tokens: 100,
      cache_key: 'k',
      private_key: '-----BEGIN',
      signingKey: 'k2',
      webhook: 'posted to https://user:pw@hooks.example/x and https://hooks.example/y',
    };
    expect(redactedConfig(config)).toEqual({
      label: 'a',
      apiKey: '<redacted>',
      API_KEY: '<redacted>',
      'api-key': '<redacted>',
      clientSecret: '<redacted>',
      auth: { Authorization: '<redacted>', user: 'me', list: [{ accessToken: '<redacted>' }, 1, 'token'] },
      passwd: '<redacted>',
      db_password: '<redacted>',
      credentials: '<redacted>',
      tokens_used: 3,
      max_tokens: 100,
      cache_key: 'k',
      private_key: '<redacted>',
      signingKey: '<redacted>',
      webhook: 'posted to https://<redacted>@hooks.example/x and https://hooks.example/y',
    });
    expect(redactedConfig(['x', { secret: 's' }])).toEqual(['x', { secret: '<redacted>' }]);
    expect(redactedConfig('token')).toBe('token');
  });

  it('a replay fills each redacted credential from the current config at the same path when it has one; every other value is the recorded one', () => {
    const recorded: JsonValue = {
      label: 'a',
      apiKey: '<redacted>',
      note: '<redacted>',
      auth: { token: '<redacted>', password: '<redacted>' },
      list: [{ secret: '<redacted>' }],
    };
    const current: JsonValue = { label: 'b', apiKey: 'sk-now', note: 'other', auth: { token: { id: 1 } }, list: [{ secret: 's' }] };
    expect(fillRedacted(recorded, current)).toEqual({
      label: 'a',
      apiKey: 'sk-now',
      note: '<redacted>',
      auth: { token: { id: 1 }, password: '<redacted>' },
      list: [{ secret: 's' }],
    });
    expect(fillRedacted(recorded, undefined)).toEqual(recorded);
    // A URL's user and password come back from the current config when the URL is the same but for them.
    expect(fillRedacted({ hook: 'https://<redacted>@h.example/x' }, { hook: 'https://u:p@h.example/x' })).toEqual({ hook: 'https://u:p@h.example/x' });
    expect(fillRedacted({ hook: 'https://<redacted>@h.example/x' }, { hook: 'https://u:p@other.example/x' })).toEqual({
      hook: 'https://<redacted>@h.example/x',
    });
  });
});

describe('recordRun with app plugins', () => {
  it('the header lists a catalog plugin as {id}, a factory-made one as {id, factory, config} with its credentials redacted, any other as {id}; and the app that ran', async () => {
    const { transcript } = await recordRun(setup({ app: { file: 'app.ts', version: '1.2.3' } }));
    const header = headerOf(transcript);
    expect(header['plugins']).toEqual([
      { id: 'reminder' },
      { id: 'tagger', factory: 'tagger', config: { label: 'a', apiKey: '<redacted>', note: 'n' } },
      { id: 'plain' },
    ]);
    expect(header['app']).toEqual({ file: 'app.ts', version: '1.2.3' });
    expect(transcript).not.toContain('sk-then');
    const { transcript: without } = await recordRun(setup());
    expect(headerOf(without)['app']).toBeUndefined();
  });

  it('a catalog id that is not in the catalog is still refused', async () => {
    await expect(recordRun(setup({ plugins: ['nope'] }))).rejects.toThrow(/^unknown plugin 'nope' \(catalog: /);
  });

  it('the app that ran is not covered by the config digest: a replay does not read it', async () => {
    const { transcript } = await recordRun(setup({ app: { file: 'app.ts', version: '1.2.3' } }));
    const edited = transcript.replace('"version":"1.2.3"', '"version":"9.9.9"');
    expect(edited).not.toBe(transcript);
    expect((await replayTranscript(edited, { app: { plugins: [tagger()({ label: 'a', apiKey: 'k', note: 'n' }), plain] } })).identical).toBe(true);
  });
});

describe('replayTranscript with an app', () => {
  it('makes a factory plugin again from the recorded config (credentials from the current one) and replays identical', async () => {
    const { transcript } = await recordRun(setup());
    const seen: JsonValue[] = [];
    // The app as it is now: the same code, another config (a replay uses the recorded one).
    const now = tagger('', seen)({ label: 'b', apiKey: 'sk-now', note: 'changed' });
    const report = await replayTranscript(transcript, { app: { plugins: [now, plain] } });
    expect(report.divergence).toBeUndefined();
    expect(report.identical).toBe(true);
    expect(seen.at(-1)).toEqual({ label: 'a', apiKey: 'sk-now', note: 'n' });
  });

  it('a factory whose code changed what the run does is a divergence at the first line it changes', async () => {
    const { transcript } = await recordRun(setup());
    const changedLine = transcript.split('\n').findIndex((l) => l.includes('"tagger.labels":["a"]')) + 1;
    expect(changedLine).toBeGreaterThan(1);
    const report = await replayTranscript(transcript, { app: { plugins: [tagger('!')({ label: 'a', apiKey: 'k', note: 'n' }), plain] } });
    expect(report.identical).toBe(false);
    expect(report.at).toEqual({ line: changedLine, record: 'event' });
    expect(report.firstDifference?.diff).toEqual(['- snapshot.extensions.tagger.labels[0]: "a"', '+ snapshot.extensions.tagger.labels[0]: "a!"']);
  });

  it('a plugin of the app that no factory made is taken by its name; stop policies are taken from the app by id too', async () => {
    const { transcript } = await recordRun(setup({ stopPolicies: [never] }));
    expect(headerOf(transcript)['stop_policies']).toEqual(['never']);
    const app = { plugins: [plain, tagger()({ label: 'z', apiKey: 'k', note: 'n' })], stopPolicies: [never] };
    expect(await replayTranscript(transcript, { app })).toMatchObject({ identical: true });
    expect(await replayTranscript(transcript, { app: { plugins: app.plugins }, stopPolicies: new Map([['never', never]]) })).toMatchObject({ identical: true });
    const lacking = await replayTranscript(transcript, { app: { plugins: app.plugins } });
    expect(lacking).toMatchObject({
      identical: false,
      divergence: { port: 'transcript', message: "custom stop policy 'never' is neither given nor in the app", line: 1 },
      at: { line: 1, record: 'header' },
      missing: { kind: 'stop_policy', id: 'never' },
    });
  });

  it('a plugin the app lacks fails the replay at line 1, naming it, and the report says which is missing', async () => {
    const { transcript } = await recordRun(setup());
    const noFactory = await replayTranscript(transcript, { app: { plugins: [plain, taggerPlugin('a')] } });
    expect(noFactory).toEqual({
      identical: false,
      expectedEvents: expect.any(Number),
      actualEvents: 0,
      divergence: { port: 'transcript', message: "plugin 'tagger' (factory 'tagger') is not in the app", atEvent: 0, line: 1, unreplayable: true },
      at: { line: 1, record: 'header' },
      missing: { kind: 'plugin', id: 'tagger', factory: 'tagger' },
    });
    const noPlain = await replayTranscript(transcript, { app: { plugins: [tagger()({ label: 'a', apiKey: 'k', note: 'n' })] } });
    expect(noPlain).toMatchObject({
      divergence: { message: "plugin 'plain' is neither built in nor in the app", line: 1 },
      missing: { kind: 'plugin', id: 'plain' },
    });
    expect(noPlain.missing).toEqual({ kind: 'plugin', id: 'plain' });
    // Without an app, the first plugin that is not built in is the one named.
    expect((await replayTranscript(transcript)).divergence?.message).toBe("plugin 'tagger' (factory 'tagger') is not in the app");
  });

  it('missingCode says the same before any replay, from the header alone; nothing when the app has everything', async () => {
    const { transcript } = await recordRun(setup({ stopPolicies: [never] }));
    expect(missingCode(transcript, {})).toEqual({
      kind: 'plugin',
      id: 'tagger',
      factory: 'tagger',
      message: "plugin 'tagger' (factory 'tagger') is not in the app",
    });
    const plugins = [tagger()({ label: 'a', apiKey: 'k', note: 'n' })];
    expect(missingCode(transcript, { app: { plugins } })).toEqual({
      kind: 'plugin',
      id: 'plain',
      message: "plugin 'plain' is neither built in nor in the app",
    });
    expect(missingCode(transcript, { app: { plugins: [...plugins, plain] } })).toEqual({
      kind: 'stop_policy',
      id: 'never',
      message: "custom stop policy 'never' is neither given nor in the app",
    });
    expect(missingCode(transcript, { app: { plugins: [...plugins, plain], stopPolicies: [never] } })).toBeUndefined();
    // An older transcript names its plugins by id; what is no transcript has nothing missing (the replay says what it is).
    expect(missingCode('{"type":"header","format":"awaken-transcript/5","plugins":["reminder","mine"],"stop_policies":[]}\n', {})).toEqual({
      kind: 'plugin',
      id: 'mine',
      message: "plugin 'mine' is neither built in nor in the app",
    });
    expect(missingCode('not json\n', {})).toBeUndefined();
    expect(missingCode('', {})).toBeUndefined();
  });

  it('a factory that makes a plugin of another name, or refuses the recorded config, is a divergence at line 1', async () => {
    const { transcript } = await recordRun(setup());
    const renamed = pluginFactory('tagger', (config: TaggerConfig) => taggerPlugin(config.label, 'other'));
    const made = renamed({ label: 'a', apiKey: 'k', note: 'n' });
    expect(await replayTranscript(transcript, { app: { plugins: [made, plain] } })).toMatchObject({
      identical: false,
      divergence: { port: 'transcript', message: "plugin 'tagger' (factory 'tagger') made a plugin named 'other'", line: 1 },
      at: { line: 1, record: 'header' },
    });
    const strict = pluginFactory('tagger', (config: { label: number }) => taggerPlugin(String(config.label)), { config: z.object({ label: z.number() }) });
    let refusal = '';
    try {
      strict({ label: 'a' } as never);
    } catch (e) {
      expect(e).toBeInstanceOf(PluginConfigError);
      refusal = (e as Error).message;
    }
    expect(refusal).not.toBe('');
    const app = { plugins: [strict({ label: 1 }), plain] };
    expect((await replayTranscript(transcript, { app })).divergence).toEqual({
      port: 'transcript',
      message: `plugin 'tagger' (factory 'tagger') refuses the recorded config: ${refusal}`,
      atEvent: 0,
      line: 1,
      unreplayable: true,
    });
  });
});

describe('docs/transcript-format.md → Plugins', () => {
  const doc = readFileSync(join(import.meta.dirname, '../../docs/transcript-format.md'), 'utf8').replace(/\s+/g, ' ');

  it('shows the entries a recording writes and the lines a replay fails with, as they are', async () => {
    const counter = pluginFactory('counter', (config: { limit: number; api_key: string }) => ({ name: 'counter', register: () => void config }));
    const mine: RuntimePlugin = { name: 'mine', register: () => undefined };
    const { transcript } = await recordRun(
      setup({
        agent: { id: 'a', model: 'm', system_prompt: 'be brief', plugin_ids: ['tool-gate', 'counter', 'mine'] },
        plugins: ['tool-gate', counter({ limit: 3, api_key: 'k' }), mine],
        stopPolicies: [never],
      }),
    );
    const entries = headerOf(transcript)['plugins'] as unknown[];
    expect(entries).toHaveLength(3);
    for (const entry of entries) expect(doc).toContain(`\`${JSON.stringify(entry)}\``);
    const lines = [
      await replayTranscript(transcript, { app: { plugins: [mine], stopPolicies: [never] } }),
      await replayTranscript(transcript, { app: { plugins: [counter({ limit: 1, api_key: 'k' })], stopPolicies: [never] } }),
      await replayTranscript(transcript, { app: { plugins: [counter({ limit: 1, api_key: 'k' }), mine] } }),
    ].map((r) => r.divergence?.message);
    expect(lines).toEqual([
      "plugin 'counter' (factory 'counter') is not in the app",
      "plugin 'mine' is neither built in nor in the app",
      "custom stop policy 'never' is neither given nor in the app",
    ]);
    for (const line of lines) expect(doc).toContain(`\`${line}\``);
  });
});
