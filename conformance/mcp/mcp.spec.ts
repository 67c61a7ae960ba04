import fc from 'fast-check';
import { progressText, toolProgressOf } from '../../src/contract/progress.ts';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { encodeMcp, frameMcp, initialMcpState, transcodeMcp } from '../../src/protocols/mcp/encoder.ts';
import { judgeMcp, type McpVerdict } from '../../src/protocols/mcp/judge.ts';
import { runResumedOf, runResumedText } from '../../src/protocols/resumed.ts';
import { runResumed, takenUp } from '../resumed.ts';
import { eventsOf, goldenOf, runEvents, streams } from '../support.ts';

/** What the official client received must be the run: its text, its ending, its progress. */
function expectSameContent(events: readonly AgentEvent[], v: McpVerdict): void {
  const end = events.findIndex((e) => e.event_type === 'run_finish' || e.event_type === 'error');
  const run = end < 0 ? events : events.slice(0, end + 1);
  const text = run.map((e) => (e.event_type === 'text_delta' ? e.delta : '')).join('');
  const terminal = run.at(-1);
  const failed =
    end < 0 ||
    terminal?.event_type === 'error' ||
    (terminal?.event_type === 'run_finish' && ['error', 'cancelled', 'blocked', 'suspended'].includes(terminal.termination.type));
  const result = v.result;
  expect(result).toBeDefined();
  expect(result?.isError).toBe(failed);
  const texts = (result?.content ?? []).map((c) => (c.type === 'text' ? c.text : ''));
  if (text !== '') expect(texts[0]).toBe(text);
  else if (!failed) expect(texts).toEqual(['(no response)']);
  if (terminal?.event_type === 'run_finish' && end >= 0) {
    expect(result?.structuredContent).toEqual({ termination: terminal.termination, runId: terminal.run_id, threadId: terminal.thread_id });
  }
  // One progress report per start, step, tool call ready/done, inference, tool progress report and
  // take-up of the run.
  const reported = run.filter(
    (e) =>
      ['run_start', 'step_start', 'tool_call_ready', 'tool_call_done', 'inference_complete'].includes(e.event_type) ||
      toolProgressOf(e) !== undefined ||
      runResumedOf(e) !== undefined,
  ).length;
  expect(v.progress.map((p) => p.progress)).toEqual(Array.from({ length: reported }, (_, i) => i + 1));
  // A tool's own progress reaches the client as its words: `tool <name>: <message> (<percent>)`.
  const tools = run.flatMap((e) => {
    const p = toolProgressOf(e);
    return p === undefined ? [] : [`tool ${p.tool_name}: ${progressText(p)}`];
  });
  expect(v.progress.map((p) => p.message).filter((m) => tools.includes(m ?? ''))).toEqual(tools);
  // Where a run taken up again went on, in words, right after its start.
  const resumed = run.flatMap((e) => {
    const r = runResumedOf(e);
    return r === undefined ? [] : [runResumedText(r)];
  });
  expect(v.progress.map((p) => p.message).filter((m) => m?.startsWith('The run was taken up again') === true)).toEqual(resumed);
}

describe('MCP tools/call encoder, judged by @modelcontextprotocol/sdk', () => {
  it.each(streams)('%s matches its golden messages byte for byte', (file) => {
    expect(frameMcp(encodeMcp(eventsOf(file)))).toBe(goldenOf('mcp', file));
  });

  it.each(streams)('%s passes the judge and the official client receives the run', async (file) => {
    const events = eventsOf(file);
    const v = await judgeMcp(frameMcp(encodeMcp(events)));
    expect(v.problems).toEqual([]);
    expectSameContent(events, v);
  });

  it('a run taken up again after its process stopped: the client hears where it went on in its progress', async () => {
    const v = await judgeMcp(frameMcp(encodeMcp(takenUp(eventsOf('run-one-tool.events.jsonl'), { from: 'tool_batch', step: 2 }))));
    expect(v.problems).toEqual([]);
    expect(v.progress.slice(0, 3)).toEqual([
      { progress: 1, message: 'starting agent run' },
      { progress: 2, message: 'The run was taken up again after its process stopped: inside the tool batch of step 2.' },
      { progress: 3, message: 'step 2' },
    ]);
  });

  it('progress and the response carry the request id and progress token they are given', async () => {
    const body = frameMcp(encodeMcp(eventsOf('run-one-tool.events.jsonl')), 7, 'tok');
    expect(body.split('\n').at(-2)).toMatch(/^\{"jsonrpc":"2.0","id":7,"result":/);
    expect((await judgeMcp(body, 7, 'tok')).problems).toEqual([]);
    expect((await judgeMcp(body, 1)).problems.length).toBeGreaterThan(0);
  });

  const notify = (progress: number): string => JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress } });
  const answer = (result: unknown, id: unknown = 1): string => JSON.stringify({ jsonrpc: '2.0', id, result });
  const ok = { content: [{ type: 'text', text: 'hi' }], isError: false };
  it.each([
    ['a result without content', [answer({ isError: false })]],
    ['a bad content type', [answer({ content: [{ type: 'txt', text: 'x' }] })]],
    ['progress that does not increase', [notify(2), notify(2), answer(ok)]],
    ['a notification after the response', [answer(ok), notify(1)]],
    ['no response', [notify(1)]],
    ['two responses', [answer(ok), answer(ok)]],
    ['a response to another request', [answer(ok, 2)]],
    ['not JSON-RPC', [JSON.stringify({ jsonrpc: '1.0', id: 1, result: ok })]],
    ['an unknown notification', [JSON.stringify({ jsonrpc: '2.0', method: 'notifications/bogus', params: {} }), answer(ok)]],
  ])('the judge rejects %s (it is live)', async (_name, lines) => {
    const v = await judgeMcp(`${lines.join('\n')}\n`);
    expect(v.problems.length).toBeGreaterThan(0);
  });

  it('one tools/call has one result: nothing after the terminal event, not even a new run', () => {
    let s = initialMcpState();
    [s] = transcodeMcp(s, { event_type: 'run_start', thread_id: 't', run_id: 'r' });
    const [after, out] = transcodeMcp(s, { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'natural_end' } });
    expect(out.result?.isError).toBe(false);
    expect(transcodeMcp(after, { event_type: 'run_start', thread_id: 't', run_id: 'r2' })[1]).toEqual({ progress: [], result: undefined });
  });

  it('a run whose events stop early ends in an error result', async () => {
    const events = eventsOf('run-one-tool.events.jsonl').slice(0, 4);
    const v = await judgeMcp(frameMcp(encodeMcp(events)));
    expect(v.problems).toEqual([]);
    expect(v.result?.isError).toBe(true);
    expect(v.result?.content.at(-1)).toEqual({ type: 'text', text: 'agent run ended without terminal status' });
  });

  it('property: the call of any run, taken up again or not, passes the judge and the client receives its text and ending', async () => {
    await fc.assert(
      fc.asyncProperty(runEvents, fc.option(runResumed, { nil: undefined }), async (run, at) => {
        const events = at === undefined ? await run : takenUp(await run, at);
        const v = await judgeMcp(frameMcp(encodeMcp(events)));
        expect(v.problems).toEqual([]);
        expectSameContent(events, v);
      }),
      { numRuns: 50 },
    );
  });
});
