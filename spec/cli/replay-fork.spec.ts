import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit.ts';
import { cli } from '../support/cli.ts';
import { repo } from '../support/serve-process.ts';

/**
 * `awaken replay FILE --fork-at STEP`: a corpus run forked as it is, with an edit and a scripted
 * model, and an app's run forked with its plugin's config edited (the suffix runs the app's plugin,
 * made again by its factory from the edited config, and the app's tool); each child replays
 * identical; bad input is one line each with the exit code docs/cli.md gives. Outputs compared whole.
 */

const APP = 'spec/cli/fixtures/apps/helper.ts';
const dir = mkdtempSync(join(tmpdir(), 'awaken-fork-'));
const run = join(dir, 'run.jsonl');
const helper = join(dir, 'helper.jsonl');
const waiting = join(dir, 'waiting.jsonl');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

beforeAll(async () => {
  copyFileSync(join(repo, 'fixtures/runs/03-one-tool.jsonl'), run);
  copyFileSync(join(repo, 'fixtures/runs/11-suspension-resumed-replay-tool-call.jsonl'), waiting);
  writeFileSync(join(dir, 'brief.yaml'), '- text: Brief.\n');
  writeFileSync(join(dir, 'again.yaml'), '- tool_calls: [{ id: c2, name: shout, arguments: { text: again } }]\n- text: Shouted again.\n');
  expect((await cli('record', '--out', helper, '--', 'run', '--app', APP, 'say hi')).code).toBe(EXIT.ok);
}, 60_000);

const replayed = async (file: string, ...more: string[]) => {
  const r = await cli('replay', ...more, file);
  return r.out.split('\n')[1]?.split(/\s+/)[0];
};

describe('awaken replay --fork-at', () => {
  it('a run forked as it is: the recording answers the rest; the child is written beside it and replays identical', async () => {
    expect(await cli('replay', run, '--fork-at', '1')).toEqual({
      code: EXIT.ok,
      out: [
        `forked ${run} at step 1 → ${join(dir, 'run.fork-1.jsonl')}`,
        'prefix: 7 event(s), replayed as recorded',
        'suffix: 1 step(s), natural_end; inferences answered by the recording: 1, by the model: 0',
        '',
      ].join('\n'),
      err: '',
    });
    const child = readFileSync(join(dir, 'run.fork-1.jsonl'), 'utf8');
    expect(JSON.parse(child.slice(0, child.indexOf('\n'))).fork).toMatchObject({ parent: run, at_step: 1 });
    expect(await replayed(join(dir, 'run.fork-1.jsonl'))).toBe('identical');
  });

  it('an edited prompt needs a model: without one the line names the step; with one the child asks it', async () => {
    const edit = '/agent/system_prompt="Be brief."';
    expect(await cli('replay', run, '--fork-at', '1', '--edit', edit)).toEqual({
      code: EXIT.usage,
      out: '',
      err: `awaken replay: ${run}: step 2: the request differs from the recorded one at messages[0].content[0].text: a model must answer from here (--model)\n`,
    });
    const out = join(dir, 'brief.jsonl');
    expect(await cli('replay', run, '--fork-at', '1', '--edit', edit, '--model', `scripted:${join(dir, 'brief.yaml')}`, '--out', out)).toEqual({
      code: EXIT.ok,
      out: [
        `forked ${run} at step 1 → ${out}`,
        'prefix: 7 event(s), replayed as recorded; 1 edit(s): /agent/system_prompt',
        'suffix: 1 step(s), natural_end; inferences answered by the recording: 0, by the model: 1',
        '',
      ].join('\n'),
      err: '',
    });
    expect(readFileSync(out, 'utf8')).toContain('"response":"Brief."');
    expect(await replayed(out)).toBe('identical');
  });

  it('a provider by name answers the suffix (ollama:MODEL on an OpenAI-compatible endpoint): it is asked with the edited prompt, and the child replays from what it answered', async () => {
    const asked: { model: string; system: string }[] = [];
    const chunk = (delta: object, finish: string | null, usage?: object) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'qwen2.5', choices: [{ index: 0, delta, finish_reason: finish }], ...(usage !== undefined ? { usage } : {}) })}\n\n`;
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const request = JSON.parse(body) as { model: string; messages: { role: string; content: string }[] };
        asked.push({ model: request.model, system: request.messages.find((m) => m.role === 'system')?.content ?? '' });
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(
          `${chunk({ role: 'assistant', content: 'Brief, and live.' }, null)}${chunk({}, 'stop', { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 })}data: [DONE]\n\n`,
        );
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const before = process.env['OLLAMA_BASE_URL'];
    process.env['OLLAMA_BASE_URL'] = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    try {
      const out = join(dir, 'live.jsonl');
      expect(await cli('replay', run, '--fork-at', '1', '--edit', '/agent/system_prompt="Be brief."', '--model', 'ollama:qwen2.5', '--out', out)).toEqual({
        code: EXIT.ok,
        out: [
          `forked ${run} at step 1 → ${out}`,
          'prefix: 7 event(s), replayed as recorded; 1 edit(s): /agent/system_prompt',
          'suffix: 1 step(s), natural_end; inferences answered by the recording: 0, by the model: 1',
          '',
        ].join('\n'),
        err: '',
      });
      expect(asked).toEqual([{ model: 'qwen2.5', system: 'Be brief.' }]);
      expect(readFileSync(out, 'utf8')).toContain('"response":"Brief, and live."');
      expect(await replayed(out)).toBe('identical');
      // The provider is not asked again by the replay: the child holds its answer.
      expect(asked).toHaveLength(1);
    } finally {
      if (before === undefined) delete process.env['OLLAMA_BASE_URL'];
      else process.env['OLLAMA_BASE_URL'] = before;
      server.close();
    }
    // A provider whose key is not in the environment, and a name that is no provider: one line each.
    const key = process.env['OPENAI_API_KEY'];
    delete process.env['OPENAI_API_KEY'];
    try {
      expect(await cli('replay', run, '--fork-at', '1', '--model', 'openai:gpt-4o-mini')).toEqual({
        code: EXIT.unavailable,
        out: '',
        err: 'awaken replay: openai:gpt-4o-mini needs its API key in OPENAI_API_KEY\n',
      });
      // A transcript that is not there is said first.
      expect(await cli('replay', join(dir, 'missing.jsonl'), '--fork-at', '1', '--model', 'openai:gpt-4o-mini')).toEqual({
        code: EXIT.noInput,
        out: '',
        err: `awaken replay: cannot read ${join(dir, 'missing.jsonl')}: no such file\n`,
      });
    } finally {
      if (key !== undefined) process.env['OPENAI_API_KEY'] = key;
    }
    expect(await cli('replay', run, '--fork-at', '1', '--model', 'cohere:command-r')).toEqual({
      code: EXIT.usage,
      out: '',
      err: "awaken replay: --model: 'cohere:command-r' names no provider: use openai:MODEL, anthropic:MODEL, google:MODEL, mistral:MODEL, ollama:MODEL, scripted:FILE or transcript:FILE; see awaken replay --help\n",
    });
  });

  it("an app's run with its plugin's config edited: the suffix runs the plugin made from the edited config, and the app's tool", async () => {
    const out = join(dir, 'counted.jsonl');
    const args = (step: string, file: string) => [
      'replay',
      '--app',
      APP,
      helper,
      '--fork-at',
      '2',
      '--model',
      `scripted:${join(dir, 'again.yaml')}`,
      '--out',
      file,
      '--edit',
      '/messages/-={"role":"user","content":[{"type":"text","text":"again"}]}',
      '--edit',
      `/plugins/0/config/step=${step}`,
    ];
    expect(await cli(...args('10', out))).toEqual({
      code: EXIT.ok,
      out: [
        `forked ${helper} at step 2 → ${out}`,
        'prefix: 13 event(s), replayed as recorded; 2 edit(s): /messages/-, /plugins/0/config/step',
        'suffix: 2 step(s), natural_end; inferences answered by the recording: 0, by the model: 2',
        '',
      ].join('\n'),
      err: '',
    });
    const lastCount = (file: string): number => {
      const counts = [...readFileSync(file, 'utf8').matchAll(/"counter\.calls":(\d+)/g)].map((m) => Number(m[1]));
      return counts.at(-1) as number;
    };
    // One call counted 1 before the fork, the one after it 10 (and 1 on the config as recorded).
    expect(lastCount(out)).toBe(11);
    const plain = join(dir, 'plain.jsonl');
    expect((await cli(...args('1', plain))).code).toBe(EXIT.ok);
    expect(lastCount(plain)).toBe(2);
    const header = JSON.parse(readFileSync(out, 'utf8').split('\n')[0] as string) as { plugins: unknown };
    expect(header.plugins).toEqual([{ id: 'counter', factory: 'counter', config: { step: 10 } }]);
    expect(await replayed(out, '--app', APP)).toBe('identical');
  });

  it('bad input: one line each, with its exit code', async () => {
    const cases: [string[], number, string][] = [
      [[run, '--fork-at', '3'], EXIT.usage, `${run}: step 3 is past the run's end: it has 2 step(s)`],
      [[run, '--fork-at', '1', '--edit', '/agent/prompt="Be brief."'], EXIT.usage, `${run}: /agent/prompt: the fork point has no /agent/prompt`],
      [[run, '--fork-at', '1', '--edit', '/agent/max_rounds="many"'], EXIT.usage, `${run}: /agent/max_rounds: Invalid input: expected number, received string`],
      [[run, '--fork-at', '0'], EXIT.usage, '--fork-at 0: a step number, from 1; see awaken replay --help'],
      [
        [run, '--fork-at', '1', '--edit', '/agent/system_prompt'],
        EXIT.usage,
        `--edit /agent/system_prompt: give PATH=JSON (/agent/system_prompt='"Be brief."'); see awaken replay --help`,
      ],
      [
        [run, '--fork-at', '1', '--edit', '/agent/system_prompt=Be'],
        EXIT.usage,
        `--edit /agent/system_prompt: the value is not JSON (a string is quoted: '"text"'); see awaken replay --help`,
      ],
      [[run, '--edit', '/agent/system_prompt="x"'], EXIT.usage, '--edit is an option of a fork: give --fork-at STEP too; see awaken replay --help'],
      [[run, '--fork-at', '1', '--baseline'], EXIT.usage, '--fork-at writes a child transcript: not with --baseline; see awaken replay --help'],
      [[run, run, '--fork-at', '1'], EXIT.usage, '--fork-at forks one transcript: give one FILE, not 2; see awaken replay --help'],
      [[join(dir, 'none.jsonl'), '--fork-at', '1'], EXIT.noInput, `cannot read ${join(dir, 'none.jsonl')}: no such file`],
      [[run, '--fork-at', '99999999999999999999'], EXIT.usage, '--fork-at 99999999999999999999: a step number, from 1; see awaken replay --help'],
      [[run, '--fork-at', '1', '--out', run], EXIT.usage, `--out ${run} is the transcript forked: give the child another file; see awaken replay --help`],
      [[waiting, '--fork-at', '1'], EXIT.data, `${waiting}: step 1 ends with the run waiting for a decision: a fork goes on from a step the run went on from`],
    ];
    for (const [argv, code, line] of cases) expect(await cli('replay', ...argv), argv.join(' ')).toEqual({ code, out: '', err: `awaken replay: ${line}\n` });
    // A parent that no longer replays up to the step.
    const changed = join(dir, 'changed.jsonl');
    writeFileSync(
      changed,
      readFileSync(run, 'utf8').replace('"data":{"echoed":"ping"},"message":null}}\n{"type":"env"', '"data":{"echoed":"pong"},"message":null}}\n{"type":"env"'),
    );
    expect(await cli('replay', changed, '--fork-at', '1')).toEqual({
      code: EXIT.failed,
      out: '',
      err: `awaken replay: ${changed}: the run does not replay up to step 1: line 22 (event #6) differs: - result.data.echoed: "ping"\n`,
    });
    expect(existsSync(join(dir, 'changed.fork-1.jsonl'))).toBe(false);
  });

  it('the lines docs/cli.md shows, as a process in a folder of its own', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'awaken-fork-doc-'));
    copyFileSync(run, join(cwd, 'run.jsonl'));
    const shown = readFileSync(join(repo, 'docs/cli.md'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('awaken replay: run.jsonl: '));
    expect(shown).toHaveLength(3);
    const argvs = [
      ['--fork-at', '3'],
      ['--fork-at', '1', '--edit', '/agent/prompt="Be brief."'],
      ['--fork-at', '1', '--edit', '/agent/system_prompt="Be brief."'],
    ];
    for (const [i, argv] of argvs.entries()) {
      const r = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), 'replay', 'run.jsonl', ...argv], { cwd, encoding: 'utf8', timeout: 60_000 });
      expect({ code: r.status, out: r.stdout, err: r.stderr }).toEqual({ code: EXIT.usage, out: '', err: `${shown[i]}\n` });
    }
    rmSync(cwd, { recursive: true, force: true });
  });
});
