import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { deserialiseEvent } from '../../src/contract/event.ts';
import { ENCODERS } from '../../src/cli/encode-command.ts';
import { main } from '../../src/cli/main.ts';
import type { JudgeReport } from '../../src/protocols/findings.ts';

/**
 * `awaken judge` on captured bodies: every protocol's encoding of the conformance streams passes,
 * and a broken capture — an unclosed block, two terminal frames, a delta for a block never
 * started, a tool renamed on resume — exits 1 with the check, the frame and a quote of it.
 */

const repo = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'awaken-judge-'));

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (t) => (out += t), err: (t) => (err += t) }, () => Promise.resolve(''));
  return { code, out, err };
}

const encoded = (protocol: string, stream: string): string => {
  const events = readFileSync(join(repo, 'conformance/streams', `${stream}.events.jsonl`), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map(deserialiseEvent);
  return (ENCODERS[protocol] as (e: typeof events) => string)(events);
};

const SSE = new Set(['ai-sdk-v6', 'ag-ui', 'a2a']);
const split = (protocol: string, body: string): string[] =>
  SSE.has(protocol) ? body.split('\n\n').filter((f) => f !== '') : body.split('\n').filter((f) => f !== '');
const joined = (protocol: string, frames: readonly string[]): string => frames.map((f) => `${f}${SSE.has(protocol) ? '\n\n' : '\n'}`).join('');

let files = 0;
function file(protocol: string, body: string): string {
  const path = join(dir, `${++files}.${SSE.has(protocol) ? 'sse' : 'ndjson'}`);
  writeFileSync(path, body);
  return path;
}

async function judge(protocol: string, bodies: readonly string[]): Promise<{ code: number; report: JudgeReport }> {
  const r = await cli(['judge', '--protocol', protocol, '--json', ...bodies.map((b) => file(protocol, b))]);
  return { code: r.code, report: JSON.parse(r.out) as JudgeReport };
}

const findingsOf = (report: JudgeReport) => report.checks.flatMap((c) => c.findings);

describe('awaken judge FILE…', () => {
  const STREAMS = [
    'run-one-tool',
    'run-gate-ask-resumed',
    'run-reasoning',
    'edge-cancel-with-open-blocks',
    'run-inference-error',
    'run-suspension-left-waiting',
    'run-parallel-tools-parallel-streaming',
  ];
  it.each(['ai-sdk-v6', 'ag-ui', 'a2a', 'mcp', 'acp'])('passes every check on the %s encoding of the conformance streams', async (protocol) => {
    for (const stream of STREAMS) {
      const { code, report } = await judge(protocol, [encoded(protocol, stream)]);
      expect({ stream, findings: findingsOf(report) }).toEqual({ stream, findings: [] });
      expect(code).toBe(0);
      expect(report.checks.map((c) => c.check)).toEqual(['schema', 'ordering', 'closure', 'terminal', 'client', 'multi-turn']);
    }
  });

  it('prints a table of checks, and each finding with its frame and a quote', async () => {
    const frames = split('ai-sdk-v6', encoded('ai-sdk-v6', 'run-one-tool'));
    const end = frames.findIndex((f) => f.includes('"text-end"'));
    const r = await cli([
      'judge',
      '--protocol',
      'ai-sdk-v6',
      file(
        'ai-sdk-v6',
        joined(
          'ai-sdk-v6',
          frames.filter((_, i) => i !== end),
        ),
      ),
    ]);
    expect(r.code).toBe(1);
    const start = frames.findIndex((f) => f.includes('"text-start"')) + 1;
    expect(r.out).toContain('ai-sdk-v6: 1 turn');
    expect(r.out).toMatch(/^closure +FAIL +1 /m);
    expect(r.out).toMatch(/^schema +pass +0 /m);
    expect(r.out).toContain(`closure · frame ${start}: text part txt_0 opened here is never ended (the stream finishes)\n  > ${frames[start - 1]}`);
  });

  /** One broken capture: the mutation, the check it must fail and the frame (1-based, in the turn named) it must name. */
  interface Broken {
    readonly protocol: string;
    readonly name: string;
    readonly make: () => { bodies: string[]; turn: number; frame: number };
    readonly check: string;
    readonly message: RegExp;
  }

  /** The frames of a conformance stream, mutated: `drop` removes the frame matching it, `dup` doubles it. */
  function mutate(
    protocol: string,
    stream: string,
    edit: { drop?: string; dup?: string; replace?: [string, string, string] },
  ): { frames: string[]; body: string } {
    let frames = split(protocol, encoded(protocol, stream));
    if (edit.drop !== undefined) {
      const i = frames.findIndex((f) => f.includes(edit.drop as string));
      expect(i).toBeGreaterThanOrEqual(0);
      frames = frames.filter((_, j) => j !== i);
    }
    if (edit.dup !== undefined) {
      const i = frames.findIndex((f) => f.includes(edit.dup as string));
      expect(i).toBeGreaterThanOrEqual(0);
      frames = [...frames.slice(0, i + 1), frames[i] as string, ...frames.slice(i + 1)];
    }
    if (edit.replace !== undefined) {
      const [where, from, to] = edit.replace;
      frames = frames.map((f) => (f.includes(where) ? f.replace(from, to) : f));
    }
    return { frames, body: joined(protocol, frames) };
  }
  const at = (frames: readonly string[], needle: string, nth = 0): number =>
    frames.map((f, i) => [f, i] as const).filter(([f]) => f.includes(needle))[nth]![1] + 1;

  const BROKEN: Broken[] = [
    // AI SDK v6
    {
      protocol: 'ai-sdk-v6',
      name: 'an unclosed text part',
      check: 'closure',
      message: /text part txt_0 opened here is never ended/,
      make: () => {
        const m = mutate('ai-sdk-v6', 'run-one-tool', { drop: '"text-end"' });
        return { bodies: [m.body], turn: 1, frame: at(m.frames, '"text-start"') };
      },
    },
    {
      protocol: 'ai-sdk-v6',
      name: 'two terminal frames',
      check: 'ordering',
      message: /finish after the terminal chunk/,
      make: () => {
        const m = mutate('ai-sdk-v6', 'run-one-tool', { dup: '"type":"finish"' });
        return { bodies: [m.body], turn: 1, frame: at(m.frames, '"type":"finish"', 1) };
      },
    },
    {
      protocol: 'ai-sdk-v6',
      name: 'a delta for a part never started',
      check: 'ordering',
      message: /text-delta for text part txt_0, which was never started/,
      make: () => {
        const m = mutate('ai-sdk-v6', 'run-one-tool', { drop: '"text-start"' });
        return { bodies: [m.body], turn: 1, frame: at(m.frames, '"text-delta"') };
      },
    },
    {
      protocol: 'ai-sdk-v6',
      name: 'a tool renamed on resume',
      check: 'multi-turn',
      message: /tool call c1 is other here but was echo in turn 1/,
      make: () => {
        const m = mutate('ai-sdk-v6', 'run-one-tool', { replace: ['"tool-input-available"', '"toolName":"echo"', '"toolName":"other"'] });
        return { bodies: [encoded('ai-sdk-v6', 'run-one-tool'), m.body], turn: 2, frame: at(m.frames, '"tool-input-available"') };
      },
    },
    // AG-UI
    {
      protocol: 'ag-ui',
      name: 'an unclosed text message',
      check: 'closure',
      message: /text message message-4 opened here is never ended/,
      make: () => {
        const m = mutate('ag-ui', 'run-one-tool', { drop: 'TEXT_MESSAGE_END' });
        return { bodies: [m.body], turn: 1, frame: at(m.frames, 'TEXT_MESSAGE_START') };
      },
    },
    {
      protocol: 'ag-ui',
      name: 'two terminal frames',
      check: 'ordering',
      message: /RUN_FINISHED after the run ended/,
      make: () => {
        const m = mutate('ag-ui', 'run-one-tool', { dup: 'RUN_FINISHED' });
        return { bodies: [m.body], turn: 1, frame: at(m.frames, 'RUN_FINISHED', 1) };
      },
    },
    {
      protocol: 'ag-ui',
      name: 'args for a tool call never started',
      check: 'ordering',
      message: /TOOL_CALL_ARGS for tool call c1, which was never started/,
      make: () => {
        const m = mutate('ag-ui', 'run-one-tool', { drop: 'TOOL_CALL_START' });
        return { bodies: [m.body], turn: 1, frame: at(m.frames, 'TOOL_CALL_ARGS') };
      },
    },
    {
      protocol: 'ag-ui',
      name: 'a tool renamed on resume',
      check: 'multi-turn',
      message: /tool call c1 is other here but was echo in turn 1/,
      make: () => {
        const m = mutate('ag-ui', 'run-one-tool', { replace: ['TOOL_CALL_START', '"toolCallName":"echo"', '"toolCallName":"other"'] });
        return { bodies: [encoded('ag-ui', 'run-one-tool'), m.body], turn: 2, frame: at(m.frames, 'TOOL_CALL_START') };
      },
    },
    // A2A
    {
      protocol: 'a2a',
      name: 'an artifact never closed',
      check: 'closure',
      message: /artifact response streamed from here has no last chunk/,
      make: () => {
        const m = mutate('a2a', 'run-one-tool', { drop: '"lastChunk":true' });
        return { bodies: [m.body], turn: 1, frame: at(m.frames, 'artifactUpdate') };
      },
    },
    {
      protocol: 'a2a',
      name: 'two terminal frames',
      check: 'terminal',
      message: /a second final state/,
      make: () => {
        const m = mutate('a2a', 'run-one-tool', { dup: 'TASK_STATE_COMPLETED' });
        return { bodies: [m.body], turn: 1, frame: at(m.frames, 'TASK_STATE_COMPLETED', 1) };
      },
    },
    {
      protocol: 'a2a',
      name: 'a chunk appended to an artifact never started',
      check: 'ordering',
      message: /an appended chunk of artifact response, which was never started/,
      make: () => {
        const m = mutate('a2a', 'run-one-tool', { drop: 'The echo said ping.' });
        return { bodies: [m.body], turn: 1, frame: at(m.frames, 'artifactUpdate') };
      },
    },
    {
      protocol: 'a2a',
      name: 'a tool renamed on resume',
      check: 'multi-turn',
      message: /tool call c1 is other here but was echo in turn 1/,
      make: () => {
        const m = mutate('a2a', 'run-one-tool', { replace: ['"toolCall"', '"name":"echo"', '"name":"other"'] });
        return { bodies: [encoded('a2a', 'run-one-tool'), m.body], turn: 2, frame: at(m.frames, '"toolCall"') };
      },
    },
    // MCP (no blocks and no renames: one call, one response)
    {
      protocol: 'mcp',
      name: 'two terminal frames',
      check: 'terminal',
      message: /a second response/,
      make: () => {
        const m = mutate('mcp', 'run-one-tool', { dup: '"result"' });
        return { bodies: [m.body], turn: 1, frame: at(m.frames, '"result"', 1) };
      },
    },
    {
      protocol: 'mcp',
      name: 'progress for another call',
      check: 'ordering',
      message: /progress for token 7, not 1/,
      make: () => {
        const m = mutate('mcp', 'run-one-tool', { replace: ['"progress":3', '"progressToken":1', '"progressToken":7'] });
        return { bodies: [m.body], turn: 1, frame: at(m.frames, '"progress":3') };
      },
    },
    // ACP
    {
      protocol: 'acp',
      name: 'a tool call left running',
      check: 'closure',
      message: /tool call c1 announced here is still in_progress when the turn ends/,
      make: () => {
        const m = mutate('acp', 'run-one-tool', { replace: ['"status":"completed"', '"status":"completed"', '"status":"in_progress"'] });
        return { bodies: [m.body], turn: 1, frame: at(m.frames, '"sessionUpdate":"tool_call"') };
      },
    },
    {
      protocol: 'acp',
      name: 'two terminal frames',
      check: 'terminal',
      message: /a second response/,
      make: () => {
        const m = mutate('acp', 'run-one-tool', { dup: 'stopReason' });
        return { bodies: [m.body], turn: 1, frame: at(m.frames, 'stopReason', 1) };
      },
    },
    {
      protocol: 'acp',
      name: 'an update for a tool call never announced',
      check: 'ordering',
      message: /tool_call_update for tool call c1, which was never announced/,
      make: () => {
        const m = mutate('acp', 'run-one-tool', { drop: '"sessionUpdate":"tool_call"' });
        return { bodies: [m.body], turn: 1, frame: at(m.frames, 'tool_call_update') };
      },
    },
    {
      protocol: 'acp',
      name: 'a tool renamed on resume',
      check: 'multi-turn',
      message: /tool call c1 is other here but was echo in turn 1/,
      make: () => {
        const m = mutate('acp', 'run-one-tool', { replace: ['"sessionUpdate":"tool_call"', '"title":"echo"', '"title":"other"'] });
        return { bodies: [encoded('acp', 'run-one-tool'), m.body], turn: 2, frame: at(m.frames, '"sessionUpdate":"tool_call"') };
      },
    },
  ];

  it.each(BROKEN.map((b) => [b.protocol, b.name, b] as const))('%s: %s exits 1 and names the frame', async (_p, _n, b) => {
    const { bodies, turn, frame } = b.make();
    const { code, report } = await judge(b.protocol, bodies);
    expect(code).toBe(1);
    const hit = findingsOf(report).find((f) => f.check === b.check && b.message.test(f.message));
    expect(hit, JSON.stringify(findingsOf(report), null, 2)).toBeDefined();
    expect({ turn: hit?.turn, frame: hit?.frame }).toEqual({ turn, frame });
    expect(split(b.protocol, bodies[turn - 1] as string)[frame - 1]?.startsWith(hit?.quote?.replace(/…$/, '') ?? '\0')).toBe(true);
    expect(report.checks.find((c) => c.check === b.check)?.passed).toBe(false);
  });

  it('says which input is wrong: no source, two sources, a missing file, acp over a URL', async () => {
    expect((await cli(['judge', '--protocol', 'ag-ui'])).err).toMatch(
      /^awaken judge: give FILEs, --url or --command \(one of them\); see awaken judge --help\n$/,
    );
    expect((await cli(['judge', '--protocol', 'ag-ui'])).code).toBe(64);
    expect((await cli(['judge', '--protocol', 'ag-ui', '--url', 'http://x', 'f'])).code).toBe(64);
    expect((await cli(['judge', '--protocol', 'acp', '--url', 'http://x'])).err).toContain('acp runs over stdio: start the agent with --command');
    expect((await cli(['judge', '--protocol', 'ag-ui', '--approve', '--deny', '--url', 'http://x'])).code).toBe(64);
    expect((await cli(['judge', '--protocol', 'soap', 'f'])).err).toContain('--protocol must be one of ai-sdk-v6, ag-ui, a2a, mcp, acp');
    const missing = await cli(['judge', '--protocol', 'ag-ui', join(dir, 'nope.sse')]);
    expect(missing.code).toBe(66);
    expect(missing.err).toContain('cannot read');
  });

  it.each(['ai-sdk-v6', 'ag-ui', 'a2a', 'mcp'])('says a %s server that does not answer is unavailable (69)', async (protocol) => {
    // A port that was free a moment ago: nothing listens on it.
    const port = await new Promise<number>((done) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as AddressInfo).port;
        s.close(() => done(p));
      });
    });
    const url = `http://127.0.0.1:${port}/endpoint`;
    const r = await cli(['judge', '--protocol', protocol, '--url', url]);
    expect(r.err).toContain(`awaken judge: http://127.0.0.1:${port}/`);
    expect(r.err).toMatch(/does not answer \(ECONNREFUSED\)\n$/);
    expect(r.code).toBe(69);
  });
});
