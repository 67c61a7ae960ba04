import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { conformanceCommand } from '../../src/cli/conformance-command.ts';
import { main } from '../../src/cli/main.ts';

const repo = resolve(import.meta.dirname, '../..');

async function cli(argv: string[], stdin = ''): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (t) => (out += t), err: (t) => (err += t) }, () => Promise.resolve(stdin));
  return { code, out, err };
}

describe('awaken encode', () => {
  it('writes the AI SDK v6 SSE body of an event stream (the golden bytes)', async () => {
    const events = readFileSync(join(repo, 'conformance/streams/run-one-tool.events.jsonl'), 'utf8');
    const r = await cli(['encode', '--protocol', 'ai-sdk-v6'], events);
    expect(r.code).toBe(0);
    expect(r.out).toBe(readFileSync(join(repo, 'conformance/golden/ai-sdk-v6/run-one-tool.sse'), 'utf8'));
  });

  it('writes the AG-UI SSE body of an event stream (the golden bytes)', async () => {
    const events = readFileSync(join(repo, 'conformance/streams/run-suspension-left-waiting.events.jsonl'), 'utf8');
    const r = await cli(['encode', '--protocol', 'ag-ui'], events);
    expect(r.code).toBe(0);
    expect(r.out).toBe(readFileSync(join(repo, 'conformance/golden/ag-ui/run-suspension-left-waiting.sse'), 'utf8'));
    expect(r.out).toContain('"outcome":{"type":"interrupt"');
  });

  it('writes the MCP tools/call messages of an event stream (the golden bytes)', async () => {
    const events = readFileSync(join(repo, 'conformance/streams/run-one-tool.events.jsonl'), 'utf8');
    const r = await cli(['encode', '--protocol', 'mcp'], events);
    expect(r.code).toBe(0);
    expect(r.out).toBe(readFileSync(join(repo, 'conformance/golden/mcp/run-one-tool.ndjson'), 'utf8'));
  });

  it('writes the ACP session/prompt messages of an event stream (the golden bytes)', async () => {
    const events = readFileSync(join(repo, 'conformance/streams/run-gate-ask-resumed.events.jsonl'), 'utf8');
    const r = await cli(['encode', '--protocol', 'acp'], events);
    expect(r.code).toBe(0);
    expect(r.out).toBe(readFileSync(join(repo, 'conformance/golden/acp/run-gate-ask-resumed.ndjson'), 'utf8'));
    expect(r.out).toContain('"method":"session/request_permission"');
  });

  it('writes the A2A message:stream body of an event stream (the golden bytes)', async () => {
    const events = readFileSync(join(repo, 'conformance/streams/run-plain-answer.events.jsonl'), 'utf8');
    const r = await cli(['encode', '--protocol', 'a2a'], events);
    expect(r.code).toBe(0);
    expect(r.out).toBe(readFileSync(join(repo, 'conformance/golden/a2a/run-plain-answer.sse'), 'utf8'));
    expect(r.out).toContain('"state":"TASK_STATE_COMPLETED"');
  });

  it('names the line and the issue of a malformed input, exit 65 (bad data)', async () => {
    const r = await cli(['encode', '--protocol', 'ai-sdk-v6'], '{"event_type":"step_end"}\n\n{"event_type":"text_delta"}\n');
    expect(r).toMatchObject({ code: 65, err: 'awaken encode: line 3: delta: Invalid input: expected string, received undefined\n' });
    expect(await cli(['encode', '--protocol', 'ai-sdk-v6'], 'nope\n')).toMatchObject({ code: 65, err: expect.stringContaining('line 1:') });
    expect(await cli(['encode', '--protocol', 'ai-sdk-v6'], '{"event_type":"bogus"}\n')).toMatchObject({
      code: 65,
      err: expect.stringContaining('line 1: event_type:'),
    });
  });

  it('refuses a missing or unknown protocol, exit 64 (usage)', async () => {
    expect(await cli(['encode'])).toMatchObject({ code: 64, err: expect.stringContaining('--protocol is required') });
    expect(await cli(['encode', '--protocol', 'grpc'])).toMatchObject({
      code: 64,
      err: expect.stringContaining("--protocol must be one of ai-sdk-v6, ag-ui, mcp, acp, a2a, not 'grpc'"),
    });
  });
});

describe('awaken conformance', () => {
  it('judges every stream and prints the table; --json gives the cases', async () => {
    const r = await cli(['conformance']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/ai-sdk-v6\s+\d+\s+0\s+0/);
    expect(r.out).toMatch(/ag-ui\s+\d+\s+0\s+0/);
    expect(r.out).toMatch(/mcp\s+\d+\s+0\s+0/);
    expect(r.out).toMatch(/acp\s+\d+\s+0\s+0/);
    expect(r.out).toMatch(/a2a\s+\d+\s+0\s+0/);
    const j = await cli(['conformance', '--protocol', 'ai-sdk-v6', '--json']);
    const parsed = JSON.parse(j.out) as { results: { passed: boolean }[]; unexpected: string[] };
    expect(parsed.results.length).toBeGreaterThanOrEqual(35);
    expect(parsed.unexpected).toEqual([]);
    const ag = JSON.parse((await cli(['conformance', '--protocol', 'ag-ui', '--json'])).out) as { results: { protocol: string; passed: boolean }[] };
    expect(ag.results.length).toBe(parsed.results.length);
    expect(ag.results.every((x) => x.protocol === 'ag-ui' && x.passed)).toBe(true);
    expect(await cli(['conformance', '--protocol', 'grpc'])).toMatchObject({ code: 64, err: expect.stringContaining('--protocol must be one of') });
  });

  it('fails when an expected failure starts passing, naming it', async () => {
    let out = '';
    const code = await conformanceCommand(
      ['--protocol', 'ag-ui'],
      { out: (t) => (out += t), err: () => undefined },
      {
        expectedFailures: ['ag-ui/run-one-tool.events.jsonl'],
      },
    );
    expect(code).toBe(1);
    expect(out).toContain('unexpected pass: ag-ui/run-one-tool.events.jsonl');
    expect(out).toMatch(/ag-ui\s+\d+\s+0\s+1/);
  });
});
