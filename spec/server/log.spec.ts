import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLogger, errorFields, secretsOf, type LogFormat, type LogLevel } from '../../src/server/log.ts';

function capture(level: LogLevel, format: LogFormat, secrets: readonly string[] = []): { lines: string[]; log: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  const log = createLogger({ level, format, write: (l) => void lines.push(l), now: () => Date.UTC(2026, 10, 30, 12, 0, 0, 5), secrets });
  return { lines, log };
}

describe('the server log', () => {
  it('json: one object per line with time, level, message and fields; levels below the threshold are dropped', () => {
    const { lines, log } = capture('info', 'json');
    log.debug('hidden');
    log.info('request', { method: 'GET', route: '/v1/runs/:id', status: 200, ms: 3, run: 'r1', thread: undefined });
    log.error('run failed', { run: 'r1', reason: 'provider: refused' });
    expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual([
      { time: '2026-11-30T12:00:00.005Z', level: 'info', msg: 'request', method: 'GET', route: '/v1/runs/:id', status: 200, ms: 3, run: 'r1' },
      { time: '2026-11-30T12:00:00.005Z', level: 'error', msg: 'run failed', run: 'r1', reason: 'provider: refused' },
    ]);
    expect(lines.every((l) => l.endsWith('}\n') && l.split('\n').length === 2)).toBe(true);
  });

  it('pretty: time, level and message, then key=value (quoted when needed); silent writes nothing', () => {
    const { lines, log } = capture('debug', 'pretty');
    log.debug('request', { method: 'POST', path: '/v1/runs', status: 201, note: 'two words' });
    expect(lines).toEqual(['12:00:00.005 DEBUG request method=POST path=/v1/runs status=201 note="two words"\n']);
    const quiet = capture('silent', 'pretty');
    quiet.log.error('nobody hears this');
    expect(quiet.lines).toEqual([]);
  });

  it('redacts credential fields, bearer tokens, URL passwords and the secret values it was given', () => {
    const { lines, log } = capture('info', 'json', ['sk-live-1234567890']);
    log.info('request', {
      authorization: 'Bearer abc.def',
      headers: { 'x-api-key': 'k-123456789', cookie: 'session=1' },
      api_key: 'whatever-it-is',
      admin_token: 'tok-123456',
      store: 'postgres://app:hunter2secret@db.internal/awaken',
      error: 'request to https://api.example failed: 401 for key sk-live-1234567890 (Authorization: Bearer sk-other-token)',
      input_tokens: 12,
    });
    const line = lines[0] ?? '';
    for (const secret of ['abc.def', 'k-123456789', 'session=1', 'whatever-it-is', 'tok-123456', 'hunter2secret', 'sk-live-1234567890', 'sk-other-token'])
      expect(line).not.toContain(secret);
    expect(JSON.parse(line)).toMatchObject({ store: 'postgres://app:[redacted]@db.internal/awaken', input_tokens: 12, api_key: '[redacted]' });
  });

  it('a secret value never reaches a line, wherever it is put (property)', () => {
    const secret = fc.stringMatching(/^[A-Za-z0-9]{8,40}$/).map((s) => `sk-${s}`);
    const text = fc.string({ maxLength: 20 });
    fc.assert(
      fc.property(
        secret,
        text,
        text,
        fc.constantFrom<LogFormat>('json', 'pretty'),
        fc.constantFrom('msg', 'field', 'nested', 'array'),
        (s, before, after, format, where) => {
          const { lines, log } = capture('debug', format, [s]);
          const placed = `${before}${s}${after}`;
          if (where === 'msg') log.info(placed);
          else if (where === 'field') log.warn('x', { detail: placed });
          else if (where === 'nested') log.error('x', { error: { message: placed } });
          else log.debug('x', { list: [placed, 1] });
          return lines.length === 1 && !(lines[0] ?? '').includes(s);
        },
      ),
    );
  });

  it('control characters never reach a line raw: a terminal escape in a message or a value is written escaped (pretty and json)', () => {
    const red = '\u001b[31mred\u001b[0m';
    const pretty = capture('info', 'pretty');
    pretty.log.info(`path ${red}`, { path: `/v1/${red}`, note: 'a\u009b2Jb\u007f', nested: { p: red }, list: ['\r\n'] });
    expect(pretty.lines).toEqual([
      '12:00:00.005 INFO  path \\u001b[31mred\\u001b[0m path="/v1/\\u001b[31mred\\u001b[0m" note="a\\u009b2Jb\\u007f" nested={"p":"\\u001b[31mred\\u001b[0m"} list=["\\r\\n"]\n',
    ]);
    const json = capture('info', 'json');
    json.log.info(`path ${red}`, { note: 'a\u009b2Jb\u2028' });
    expect(json.lines[0]).toBe('{"time":"2026-11-30T12:00:00.005Z","level":"info","msg":"path \\u001b[31mred\\u001b[0m","note":"a\\u009b2Jb\\u2028"}\n');
    expect(JSON.parse(json.lines[0] ?? '')).toMatchObject({ msg: `path ${red}`, note: 'a\u009b2Jb\u2028' });
  });

  it('no line holds a control character but its final newline, whatever is logged (property)', () => {
    const anyText = fc.string({ unit: 'binary', maxLength: 30 });
    fc.assert(
      fc.property(anyText, anyText, fc.constantFrom<LogFormat>('json', 'pretty'), (message, value, format) => {
        const { lines, log } = capture('debug', format);
        log.info(message, { value, nested: { value } });
        const line = lines[0] ?? '';
        return lines.length === 1 && line.endsWith('\n') && !/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(line.slice(0, -1));
      }),
    );
  });

  it('the secrets of an environment: variables named like keys, tokens, secrets and passwords', () => {
    expect(
      secretsOf({ OPENAI_API_KEY: 'sk-abcdef', AWAKEN_ADMIN_TOKEN: 'admin-123456', PGPASSWORD: 'pw-secret', HOME: '/root', SHORT_KEY: 'abc' }).sort(),
    ).toEqual(['admin-123456', 'pw-secret', 'sk-abcdef']);
  });

  it('an error is told with its code and the chain of causes', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    const e = new Error('Cannot connect to API: fetch failed', { cause: new TypeError('fetch failed', { cause: refused }) });
    expect(errorFields(e)).toEqual({ error: 'Cannot connect to API: fetch failed', cause: 'fetch failed ← connect ECONNREFUSED 127.0.0.1:1 (ECONNREFUSED)' });
    expect(errorFields('plain')).toEqual({ error: 'plain' });
  });
});
