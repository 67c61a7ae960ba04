import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../../src/contract/event.ts';
import type { JsonValue } from '../../../src/contract/json.ts';
import { encodeMcp, frameMcp } from '../../../src/protocols/mcp/encoder.ts';
import { resumed, resumedSegment } from '../../support/resumed-segment.ts';

/** A run taken up again inside the tool batch of its step 2. */
const segment = (content: JsonValue): AgentEvent[] => resumedSegment(content, 'm2', [{ event_type: 'text_delta', delta: 'done' }]);

const progress = (n: number, message: string): string =>
  `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: n, message } })}\n`;

describe('MCP: a run taken up again after its process stopped', () => {
  it('says where it went on in a progress notification, and counts the steps on from there', () => {
    expect(frameMcp(encodeMcp(segment({ from: 'tool_batch', step: 2 })))).toBe(
      progress(1, 'starting agent run') +
        progress(2, 'The run was taken up again after its process stopped: inside the tool batch of step 2.') +
        progress(3, 'step 2') +
        `${JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          result: {
            content: [{ type: 'text', text: 'done' }],
            structuredContent: { termination: { type: 'natural_end' }, runId: 'r', threadId: 't' },
            isError: false,
          },
        })}\n`,
    );
  });

  it('a run that went on after its answer, or that ends at a step’s end, says so and counts no step', () => {
    const answered = encodeMcp(segment({ from: 'answered', step: 4 }).filter((e) => e.event_type !== 'step_start'));
    expect(answered.progress).toEqual([
      { progress: 1, message: 'starting agent run' },
      { progress: 2, message: 'The run was taken up again after its process stopped: after the answer of step 4, which ends it.' },
    ]);
    const ended = encodeMcp([
      { event_type: 'run_start', thread_id: 't', run_id: 'r' },
      resumed({ from: 'step_end', step: 1 }),
      { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'error', value: 'interrupted' } },
    ]);
    expect(ended.progress.at(-1)).toEqual({
      progress: 2,
      message: 'The run was taken up again after its process stopped: at the end of step 1, whose tool calls are not taken up; it ends interrupted.',
    });
  });

  it('a run_resumed activity whose content it cannot read is not reported', () => {
    const without = segment(null).filter((e) => e.event_type !== 'activity_snapshot');
    expect(encodeMcp(segment({ step: 2 }))).toEqual(encodeMcp(without));
    expect(encodeMcp(segment('tool_batch'))).toEqual(encodeMcp(without));
  });

  it('docs/protocols/mcp.md shows the progress message as it is sent, whole', () => {
    const page = readFileSync(join(import.meta.dirname, '../../../docs/protocols/mcp.md'), 'utf8');
    // The example sentence, as the page wraps it.
    const shown = /## A run taken up again[\s\S]*?e\.g\. `([^`]*)`/.exec(page)?.[1]?.replace(/\s+/g, ' ');
    expect(shown).toBe(encodeMcp(segment({ from: 'tool_batch', step: 2 })).progress[1]?.message);
  });
});
