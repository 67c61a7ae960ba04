import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.ts';
import { deserialiseEvent } from '../../src/contract/event.ts';

const repo = resolve(import.meta.dirname, '../..');
const confirm = join(repo, 'fixtures/scripts/demo-confirm.json');
const weather = join(repo, 'fixtures/scripts/demo-weather.yaml');

describe('awaken record / awaken replay', () => {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-rec-'));

  it('records a run and replays it identically (exit 0)', async () => {
    const file = join(dir, 'confirm.jsonl');
    const rec = await cli('record', '--out', file, '--', 'run', '--model', `scripted:${confirm}`, '--decide', 'approve', 'delete it');
    expect(rec).toMatchObject({ code: 0, out: expect.stringMatching(/^recorded \d+ lines to .*: natural_end after 2 step\(s\)\n$/) });
    const rep = await cli('replay', file);
    expect(rep.code).toBe(0);
    expect(rep.out).toContain('1 identical, 0 differ');
  });

  it('a changed transcript makes replay exit 1 with the first differing event; --json gives the reports', async () => {
    const file = join(dir, 'weather.jsonl');
    await cli('record', '--out', file, '--', 'run', '--model', `scripted:${weather}`, 'weather?');
    const bad = join(dir, 'weather-bad.jsonl');
    writeFileSync(bad, readFileSync(file, 'utf8').replace('"delta":"It is "', '"delta":"It was "'));
    const rep = await cli('replay', file, bad);
    expect(rep.code).toBe(1);
    expect(rep.err).toContain('[2/2] DIFFERS');
    expect(rep.out).toContain('first differing event: #');
    expect(rep.out).toContain('- delta: "It was "');
    expect(rep.out).toContain('1 identical, 1 differ');
    const line =
      readFileSync(bad, 'utf8')
        .split('\n')
        .findIndex((l) => l.includes('"delta":"It was "')) + 1;
    expect(rep.out).toContain(`${bad}:${line} (an event record)`);
    const json = await cli('replay', '--json', bad);
    expect(JSON.parse(json.out)[0]).toMatchObject({
      identical: false,
      firstDifference: { diff: ['- delta: "It was "', '+ delta: "It is "'] },
      at: { line, record: 'event' },
    });
    // How the replayed run ended is for callers of replayTranscript; the report stays about where it diverged.
    expect(JSON.parse(json.out)[0]).not.toHaveProperty('end');
  });

  it('--model transcript:FILE drives the loop with the recorded model answers', async () => {
    const file = join(dir, 'w.jsonl');
    await cli('record', '--out', file, '--', 'run', '--model', `scripted:${weather}`, 'weather?');
    const original = (await cli('run', '--model', `scripted:${weather}`, 'weather?')).out;
    const again = await cli('run', '--model', `transcript:${file}`, 'weather?');
    expect(again.code).toBe(0);
    const text = (out: string) =>
      out
        .trim()
        .split('\n')
        .map(deserialiseEvent)
        .filter((e) => e.event_type === 'text_delta');
    expect(text(again.out)).toEqual(text(original));
    expect(await cli('run', '--model', `transcript:${confirm}`, 'x')).toMatchObject({ code: 65, err: expect.stringContaining('holds no recorded inference') });
    // A transcript of an older format answers too.
    for (const older of ['runs-format-1', 'runs-format-2']) {
      const run = await cli('run', '--model', `transcript:${join(repo, 'fixtures', older, '31-context-truncation.jsonl')}`, 'x');
      expect(run.code).toBe(0);
      expect(text(run.out).map((e) => (e.event_type === 'text_delta' ? e.delta : ''))).toEqual(['Answered from the recent turns.']);
    }
  });

  it('docs/transcript-format.md → Older transcripts: an older transcript replays as migrated, and the output says so, as the page shows it', async () => {
    const doc = readFileSync(join(repo, 'docs/transcript-format.md'), 'utf8');
    const shown = /```\n(result[^`]*written as awaken-transcript\/11[^`]*)```/.exec(doc)?.[1];
    expect(shown).toBeDefined();
    // The page's path is relative to the repository, where the specs run.
    expect(await cli('replay', 'fixtures/runs-format-11/01-plain-answer.jsonl')).toEqual({ code: 0, out: shown, err: '' });
    // A transcript of the present format gets no such line.
    const now = await cli('replay', 'fixtures/runs/01-plain-answer.jsonl');
    expect(now).toEqual({
      code: 0,
      out: (shown as string).replace('runs-format-11', 'runs').replace(/\n\n[^\n]*written as[^\n]*\n/, '\n'),
      err: '',
    });
  });

  it('usage errors', async () => {
    expect(await cli('record', '--', 'run', '--model', `scripted:${weather}`, 'x')).toMatchObject({
      code: 64,
      err: expect.stringContaining('--out FILE is required'),
    });
    expect(await cli('record', '--out', join(dir, 'x.jsonl'), 'run')).toMatchObject({
      code: 64,
      err: expect.stringContaining("expected '-- <awaken run arguments>'"),
    });
    const plain = await cli('record', '--out', join(dir, 'plain.jsonl'), '--', '--model', `scripted:${weather}`, 'weather?');
    expect(plain.code).toBe(0);
    expect(await cli('record', '--out', join(dir, 'x.jsonl'), '--', 'run', '--model', 'gpt:4', 'x')).toMatchObject({ code: 64 });
    expect(await cli('record', '--out', join(dir, 'x.jsonl'), '--', 'run', 'x')).toMatchObject({ code: 64 });
    expect(await cli('replay')).toMatchObject({ code: 64 });
    expect(await cli('replay', '--bogus', 'f')).toMatchObject({ code: 64 });
    expect(await cli('replay', join(dir, 'missing.jsonl'))).toEqual({
      code: 66,
      out: '',
      err: `awaken replay: cannot read ${join(dir, 'missing.jsonl')}: no such file\n`,
    });
  });
});
