import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../../src/contract/event.ts';
import type { JsonValue } from '../../../src/contract/json.ts';
import { encodeAcp, frameAcp } from '../../../src/protocols/acp/encoder.ts';
import { resumedSegment } from '../../support/resumed-segment.ts';

/** A run taken up again at the start of its step 3 (the model is asked again). */
const segment = (content: JsonValue): AgentEvent[] =>
  resumedSegment(content, 'm3', [
    { event_type: 'reasoning_delta', delta: 'again' },
    { event_type: 'text_delta', delta: 'done' },
  ]);

describe('ACP: a run taken up again after its process stopped', () => {
  it('says where it went on as a thought of the agent, a paragraph of its own, before the step goes on', () => {
    expect(frameAcp(encodeAcp(segment({ from: 'inference', step: 3 })))).toBe(
      [
        {
          jsonrpc: '2.0',
          method: 'session/update',
          params: {
            sessionId: 'session-1',
            update: {
              sessionUpdate: 'agent_thought_chunk',
              content: { type: 'text', text: 'The run was taken up again after its process stopped: at the start of step 3, asking the model again.\n\n' },
            },
          },
        },
        {
          jsonrpc: '2.0',
          method: 'session/update',
          params: { sessionId: 'session-1', update: { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'again' } } },
        },
        {
          jsonrpc: '2.0',
          method: 'session/update',
          params: { sessionId: 'session-1', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'done' } } },
        },
        { jsonrpc: '2.0', id: 1, result: { stopReason: 'end_turn' } },
      ]
        .map((m) => `${JSON.stringify(m)}\n`)
        .join(''),
    );
  });

  it('a run_resumed activity whose content it cannot read is not sent', () => {
    const without = segment(null).filter((e) => e.event_type !== 'activity_snapshot');
    expect(encodeAcp(segment({ from: 'inference', step: 'three' }))).toEqual(encodeAcp(without));
    expect(encodeAcp(segment([]))).toEqual(encodeAcp(without));
  });

  it('docs/protocols/acp.md shows the update as it is sent, whole', () => {
    const page = readFileSync(join(import.meta.dirname, '../../../docs/protocols/acp.md'), 'utf8');
    const shown = /## A run taken up again[\s\S]*?```json\n(.*)\n```/.exec(page)?.[1];
    const first = encodeAcp(segment({ from: 'inference', step: 3 }))[0];
    expect(shown).toBe(first?.kind === 'update' ? JSON.stringify(first.update) : undefined);
  });
});
