import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../support/cli.ts';
import { deserialiseEvent } from '../../src/contract/event.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';

const repo = resolve(import.meta.dirname, '../..');
const weather = join(repo, 'fixtures/scripts/demo-weather.yaml');
const confirm = join(repo, 'fixtures/scripts/demo-confirm.json');

describe('awaken run', () => {
  it('prints one canonical AgentEvent per line, the same bytes every time', async () => {
    const a = await cli('run', '--model', `scripted:${weather}`, 'weather in Tokyo?');
    const b = await cli('run', '--model', `scripted:${weather}`, '--agent', 'demo', '--format', 'jsonl', 'weather in Tokyo?');
    expect(a.code).toBe(0);
    expect(a.out).toBe(b.out);
    const events = a.out.trimEnd().split('\n').map(deserialiseEvent);
    expect(checkRunInvariants(events)).toEqual([]);
    expect(events.find((e) => e.event_type === 'tool_call_done')).toMatchObject({ result: { data: { city: 'Tokyo', condition: 'cloudy' } } });
    expect(events.at(-1)).toMatchObject({ event_type: 'run_finish', result: { response: 'It is cloudy in Tokyo.' } });
  });

  it('pretty format is readable', async () => {
    const r = await cli('run', '--model', `scripted:${weather}`, '--format', 'pretty', 'weather?');
    expect(r.out).toContain('tool      get_weather({"city":"Tokyo"}) [call_1]');
    expect(r.out.trimEnd().split('\n').at(-1)).toBe('finish    natural_end');
  });

  it('--decide approve resumes the suspended call; --decide deny cancels it; no --decide ends suspended', async () => {
    const approve = await cli('run', '--model', `scripted:${confirm}`, '--decide', 'approve', 'delete it');
    const approved = approve.out.trimEnd().split('\n').map(deserialiseEvent);
    expect(checkRunInvariants(approved)).toEqual([]);
    expect(approved.find((e) => e.event_type === 'tool_call_resumed')).toMatchObject({
      result: { confirmed: 'delete the branch', decision: { approved: true } },
    });
    const deny = await cli('run', '--model', `scripted:${confirm}`, '--decide', 'deny', '--format', 'pretty', 'delete it');
    expect(deny.out).toContain('resumed   [call_1] {"approved":false,"reason":"denied"}');
    const none = await cli('run', '--model', `scripted:${confirm}`, '--format', 'pretty', 'delete it');
    expect(none.out.trimEnd().split('\n').at(-1)).toBe('finish    suspended');
  });

  it('reports bad usage and bad scripts with an exit code and a message', async () => {
    expect(await cli('run', 'hi')).toMatchObject({ code: 64, err: expect.stringContaining('--model is required') });
    expect(await cli('run', '--model', 'openai:gpt', 'hi')).toMatchObject({
      code: 64,
      err: expect.stringContaining('only scripted:FILE and transcript:FILE models'),
    });
    expect(await cli('run', '--model', `scripted:${weather}`, '--format', 'xml', 'hi')).toMatchObject({ code: 64 });
    expect(await cli('run', '--model', `scripted:${weather}`, '--decide', 'maybe', 'hi')).toMatchObject({ code: 64 });
    expect(await cli('run', '--model', `scripted:${weather}`, '--bogus', 'hi')).toMatchObject({
      code: 64,
      err: expect.stringContaining('unknown option --bogus'),
    });
    expect(await cli('run', '--model')).toMatchObject({ code: 64, err: expect.stringContaining('--model needs a value') });
    expect(await cli('run', '--model', `scripted:${weather}`, '--agent', 'ghost', 'hi')).toMatchObject({
      code: 64,
      err: expect.stringContaining("no agent 'ghost'"),
    });
    const dir = mkdtempSync(join(tmpdir(), 'awaken-'));
    writeFileSync(join(dir, 'bad.yaml'), '- text: 3\n  colour: red\n');
    // One line naming the step and the field (docs/scripted-models.md), never a dump of the schema's issues.
    expect(await cli('run', '--model', `scripted:${join(dir, 'bad.yaml')}`, 'hi')).toEqual({
      code: 65,
      out: '',
      err: `awaken run: cannot read script ${join(dir, 'bad.yaml')}: [0].text: Invalid input: expected string or list of strings; [0].colour: unknown field\n`,
    });
    writeFileSync(join(dir, 'steps.json'), JSON.stringify({ steps: [{ text: 'a' }, { tool_calls: [{ id: 'c', name: 'echo', argumnts: {} }] }] }));
    expect(await cli('run', '--model', `scripted:${join(dir, 'steps.json')}`, 'hi')).toEqual({
      code: 65,
      out: '',
      err: `awaken run: cannot read script ${join(dir, 'steps.json')}: steps[1].tool_calls[0].argumnts: unknown field\n`,
    });
    writeFileSync(join(dir, 'neither.yaml'), 'text: hello\n');
    expect(await cli('run', '--model', `scripted:${join(dir, 'neither.yaml')}`, 'hi')).toEqual({
      code: 65,
      out: '',
      err: `awaken run: cannot read script ${join(dir, 'neither.yaml')}: a list of steps, or {steps: [...]}\n`,
    });
    expect(await cli('run', '--model', 'scripted:/nonexistent.json', 'hi')).toMatchObject({
      code: 66,
      err: expect.stringContaining('cannot read /nonexistent.json'),
    });
  });

  it('other commands: version, help (which lists serve), unknown', async () => {
    expect((await cli('version')).out).toMatch(/^\d+\.\d+\.\d+\n$/);
    expect((await cli('help')).out).toContain('usage: awaken <command>');
    expect((await cli('help')).out).toContain('usage: awaken serve');
    expect(await cli('frobnicate')).toMatchObject({ code: 64 });
  });

  it('works through the installed bin', () => {
    const out = execFileSync(process.execPath, [join(repo, 'src/cli/awaken.js'), 'run', '--model', `scripted:${weather}`, '--format', 'pretty', 'weather?'], {
      encoding: 'utf8',
    });
    expect(out).toContain('finish    natural_end');
  });
});
