import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { recordRun } from '../../src/replay/recorder.ts';
import { replayFiles } from '../../src/replay/report.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';

/** `replayFiles` (what `awaken replay` and `npm run replay` print) replays with the app it is given. */
describe('replayFiles with an app', () => {
  const mine: RuntimePlugin = { name: 'mine', register: () => undefined };

  it('a run of an app plugin replays identical with the app, and names the missing plugin without it', async () => {
    const { transcript } = await recordRun({
      agent: { id: 'a', model: 'm', system_prompt: 'be brief', plugin_ids: ['mine'] },
      models: { m: { provider: 'p', model_name: 'pm' } },
      providers: { p: new ScriptedLlm([{ text: 'hello' }]) },
      tools: [],
      plugins: [mine],
      env: { env: deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, tick: 0 } },
      request: { messages: [Messages.user('hi')] },
    });
    const file = join(mkdtempSync(join(tmpdir(), 'awaken-report-')), 'mine.jsonl');
    writeFileSync(file, transcript);
    const events = transcript.split('\n').filter((l) => l.startsWith('{"type":"event"')).length;
    const printed = (): { out: string; err: string; io: { out(t: string): void; err(t: string): void } } => {
      const p = { out: '', err: '', io: { out: (t: string) => void (p.out += t), err: (t: string) => void (p.err += t) } };
      return p;
    };

    const withApp = printed();
    expect(await replayFiles([file], withApp.io, 'table', { app: { plugins: [mine] } })).toBe(0);
    expect(withApp.out).toBe(
      [
        `result     recorded  replayed  termination  file`,
        `identical  ${String(events).padEnd(8)}  ${String(events).padEnd(8)}  natural_end  ${file}`,
        '',
        '1 identical, 0 differ',
        '',
      ].join('\n'),
    );

    const without = printed();
    expect(await replayFiles([file], without.io, 'table')).toBe(1);
    expect(without.out).toBe(
      [
        `result   recorded  replayed  termination  file`,
        `DIFFERS  ${String(events).padEnd(8)}  0         -            ${file}`,
        '',
        `${file}:1 (a header record):`,
        "  transcript (before any event): plugin 'mine' is neither built in nor in the app",
        '',
        '0 identical, 1 differ',
        '',
      ].join('\n'),
    );
  });

  it('a file that cannot be read is one that differs, unreplayable, saying why in the words of the CLI', async () => {
    const gone = join(mkdtempSync(join(tmpdir(), 'awaken-report-')), 'gone.jsonl');
    let out = '';
    expect(await replayFiles([gone], { out: (t) => void (out += t), err: () => undefined }, 'json')).toBe(1);
    expect((JSON.parse(out) as { divergence: unknown }[])[0]?.divergence).toEqual({
      port: 'transcript',
      message: `cannot read ${gone}: no such file`,
      atEvent: 0,
      unreplayable: true,
    });
  });
});
