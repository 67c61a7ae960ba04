import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit.ts';
import { repo } from '../support/serve-process.ts';

const bin = join(repo, 'src/cli/awaken.js');
const SUBCOMMANDS = ['run', 'record', 'replay', 'encode', 'conformance', 'mcp', 'acp', 'serve', 'dev'] as const;

/** `awaken …` as a real process (no provider key); its exit code and what it wrote. */
function awaken(
  args: readonly string[],
  options: { readonly input?: string; readonly env?: NodeJS.ProcessEnv } = {},
): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [bin, ...args], {
    cwd: repo,
    encoding: 'utf8',
    input: options.input ?? '',
    env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '', ...options.env },
    timeout: 60_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

describe('the awaken command as a process: every mistake is one line and the documented exit code', () => {
  it.each(SUBCOMMANDS)('awaken %s --help (and -h, and awaken help <it>) prints its usage and exits 0', (sub) => {
    const long = awaken([sub, '--help']);
    expect({ code: long.code, err: long.err }).toEqual({ code: EXIT.ok, err: '' });
    expect(long.out).toMatch(new RegExp(`^usage: awaken ${sub}\\b`));
    expect(awaken([sub, '-h']).out).toBe(long.out);
    expect(awaken(['help', sub]).out).toBe(long.out);
  });

  it('an unknown option: one line with a "did you mean", exit 64, nothing run', () => {
    expect(awaken(['run', '--modle=scripted:x.yaml', 'hi'])).toEqual({
      code: EXIT.usage,
      out: '',
      err: 'awaken run: unknown option --modle (did you mean --model?); see awaken run --help\n',
    });
    expect(awaken(['conformance', '--protocl', 'ag-ui'])).toEqual({
      code: EXIT.usage,
      out: '',
      err: 'awaken conformance: unknown option --protocl (did you mean --protocol?); see awaken conformance --help\n',
    });
  });

  it('an unknown subcommand: one line with a "did you mean", exit 64', () => {
    const r = awaken(['serv']);
    expect(r).toEqual({
      code: EXIT.usage,
      out: '',
      err: "awaken: unknown command 'serv' (did you mean serve?); commands: run, record, replay, inspect, encode, conformance, judge, fuzz, bench, mcp, acp, serve, dev, version, help; see awaken help\n",
    });
  });

  it('awaken judge: a server that does not answer is one line, exit 69; a broken capture is a table, exit 1', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as { port: number }).port;
    await new Promise<void>((r) => closed.close(() => r()));
    expect(awaken(['judge', '--protocol', 'ai-sdk-v6', '--url', `http://127.0.0.1:${port}/v1/ai-sdk/chat`])).toEqual({
      code: EXIT.unavailable,
      out: '',
      err: `awaken judge: http://127.0.0.1:${port}/v1/ai-sdk/chat does not answer (ECONNREFUSED)\n`,
    });
    const capture = join(mkdtempSync(join(tmpdir(), 'awaken-judge-')), 'body.sse');
    writeFileSync(capture, 'data: {"type":"start"}\n\ndata: {"type":"text-delta","id":"t","delta":"x"}\n\ndata: {"type":"finish"}\n\ndata: [DONE]\n\n');
    const r = awaken(['judge', '--protocol', 'ai-sdk-v6', capture]);
    expect(r.code).toBe(EXIT.failed);
    expect(r.out).toContain(
      'ordering · frame 2: text-delta for text part t, which was never started (or is already ended)\n  > data: {"type":"text-delta","id":"t","delta":"x"}',
    );
  });

  it('--flag=value and --flag value mean the same', () => {
    const a = awaken(['run', '--model=scripted:fixtures/scripts/demo-weather.yaml', '--format=pretty', 'weather?']);
    const b = awaken(['run', '--model', 'scripted:fixtures/scripts/demo-weather.yaml', '--format', 'pretty', 'weather?']);
    expect(a.code).toBe(EXIT.ok);
    expect(a.out).toContain('finish    natural_end');
    expect(a.out.replace(/\b[0-9a-f-]{36}\b/g, 'ID')).toBe(b.out.replace(/\b[0-9a-f-]{36}\b/g, 'ID'));
  });

  it('a busy port: one line naming the port, exit 69', async () => {
    const taken = createServer();
    servers.push(taken);
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
    const port = (taken.address() as { port: number }).port;
    const r = await new Promise<{ code: number | null; err: string }>((done) => {
      const child = spawn(process.execPath, [bin, 'serve', '--store', 'memory', '--port', String(port)], {
        cwd: repo,
        env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' },
      });
      let err = '';
      child.stderr.on('data', (d: Buffer) => void (err += d.toString()));
      child.on('exit', (code) => done({ code, err }));
    });
    expect(r).toEqual({
      code: EXIT.unavailable,
      err: `awaken serve: port ${port} on 127.0.0.1 is in use (another awaken serve?): choose another with --port or PORT\n`,
    });
  }, 30_000);

  it('a closed stdout (awaken run … | head -1): a quiet exit 0, no EPIPE trace', () => {
    // Enough events to fill the pipe after head has gone.
    const dir = mkdtempSync(join(tmpdir(), 'awaken-epipe-'));
    writeFileSync(join(dir, 'long.json'), JSON.stringify([{ text: Array.from({ length: 4000 }, (_, i) => `delta number ${i} of a long answer; `) }]));
    const r = spawnSync(
      'bash',
      [
        '-c',
        `set -o pipefail; "${process.execPath}" "${bin}" run --model scripted:${join(dir, 'long.json')} hi | head -1 >/dev/null; echo "status \${PIPESTATUS[0]}" >&2`,
      ],
      { cwd: repo, encoding: 'utf8', timeout: 60_000 },
    );
    expect(r.stderr).toBe('status 0\n');
  });

  it('an invalid config field: one line naming the file, the field path and the reason, exit 65', () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-config-'));
    const file = join(dir, 'awaken.yaml');
    writeFileSync(file, 'server:\n  port: "eighty"\n');
    expect(awaken(['serve', '--config', file])).toEqual({
      code: EXIT.data,
      out: '',
      err: `awaken serve: ${file}: server.port: Invalid input: expected number, received string\n`,
    });
    writeFileSync(file, 'models:\n  small: { provider: local, model_name: tiny }\nagents:\n  - { id: helper, model: small }\n  - { id: other, model: big }\n');
    expect(awaken(['serve', '--config', file]).err).toBe(`awaken serve: ${file}: models.small.provider: no provider 'local' (providers: demo)\n`);
    writeFileSync(
      file,
      'providers:\n  local: { kind: openai-compatible, base_url: "http://127.0.0.1:1/v1" }\nmodels:\n  small: { provider: local, model_name: tiny }\nagents:\n  - { id: helper, model: small }\n  - { id: other, model: big }\n',
    );
    expect(awaken(['serve', '--config', file]).err).toBe(`awaken serve: ${file}: agents[1].model: no model 'big' (models: demo, small)\n`);
    writeFileSync(file, 'server:\n  cors: { origins: [1, 2\n');
    expect(awaken(['serve', '--config', file])).toMatchObject({
      code: EXIT.data,
      err: expect.stringMatching(new RegExp(`^awaken serve: ${file}:\\d+:\\d+: not valid YAML: [^\\n]+\\n$`)),
    });
    expect(awaken(['serve', '--config', join(dir, 'none.yaml')])).toEqual({
      code: EXIT.noInput,
      out: '',
      err: `awaken serve: cannot read the config file ${join(dir, 'none.yaml')}: no such file\n`,
    });
  });

  it('a default store whose folder ./data cannot be made: one line, exit 69', () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-data-'));
    writeFileSync(join(dir, 'data'), 'a file, not a folder');
    const r = spawnSync(process.execPath, [bin, 'serve', '--port', '0'], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' },
      timeout: 60_000,
    });
    const shown = readFileSync(join(repo, 'docs/cli.md'), 'utf8')
      .split('\n')
      .find((l) => l.includes('cannot make its folder ./data'));
    expect({ code: r.status, out: r.stdout, err: r.stderr }).toEqual({ code: EXIT.unavailable, out: '', err: `${shown}\n` });
  });

  it('a SQLite path in a missing directory: one line, exit 66, and no directory made', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'awaken-sqlite-')), 'missing', 'dir');
    expect(awaken(['serve', '--store', `sqlite:${dir}/x.db`, '--port', '0'])).toEqual({
      code: EXIT.noInput,
      out: '',
      err: `awaken serve: --store: the directory ${dir} does not exist (create it, or choose another path)\n`,
    });
    expect(existsSync(dir)).toBe(false);
  });

  it('awaken record, then awaken replay, as processes: a run with a decision replays identical; a decision missing its id exits 1 naming its line; older formats replay as they are', () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-record-'));
    const file = join(dir, 'confirm.jsonl');
    const rec = awaken(['record', '--out', file, '--', 'run', '--model', 'scripted:fixtures/scripts/demo-confirm.json', '--decide', 'approve', 'delete it']);
    expect(rec.code).toBe(0);
    const text = readFileSync(file, 'utf8');
    expect(text.startsWith('{"type":"header","format":"awaken-transcript/12"')).toBe(true);
    expect(awaken(['replay', file])).toMatchObject({ code: 0, out: expect.stringContaining('1 identical, 0 differ') });
    const lines = text.trimEnd().split('\n');
    const at = lines.findIndex((l) => l.startsWith('{"type":"decision"'));
    expect(at).toBeGreaterThan(0);
    const bad = join(dir, 'confirm-bad.jsonl');
    // The resumed tool receives the decision whole: a decision without its id is not what was recorded.
    writeFileSync(bad, `${lines.map((l, i) => (i === at ? l.replace(/"decision_id":"[^"]*",/, '') : l)).join('\n')}\n`);
    const rep = awaken(['replay', bad]);
    expect(rep.code).toBe(1);
    expect(rep.out).toContain(`${bad}:${at + 1} (a decision record)`);
    expect(rep.out).toContain('lacks decision_id: the call keeps the decision whole');
    for (const older of [
      'runs-format-1/11-suspension-resumed-replay-tool-call.jsonl',
      'runs-format-2/11-suspension-resumed-replay-tool-call.jsonl',
      'runs-format-3/12-suspension-resumed-use-decision-as-tool-result.jsonl',
    ]) {
      expect(awaken(['replay', join('fixtures', older)])).toMatchObject({ code: 0, out: expect.stringContaining('1 identical, 0 differ') });
    }
  });
});
