import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../../src/contract/event.ts';
import type { JsonValue } from '../../../src/contract/json.ts';
import { encodeA2a } from '../../../src/protocols/a2a/encoder.ts';
import { resumedSegment } from '../../support/resumed-segment.ts';

/** A run taken up again inside the tool batch of its step 2. */
const segment = (content: JsonValue): AgentEvent[] => resumedSegment(content, 'm2', [{ event_type: 'text_delta', delta: 'done' }]);

const ids = { taskId: 'r', contextId: 't' };

describe('A2A: a run taken up again after its process stopped', () => {
  it('says where it went on in a WORKING status, in words and as a runResumed data part', () => {
    expect(encodeA2a(segment({ from: 'tool_batch', step: 2 }))).toEqual([
      { task: { id: 'r', contextId: 't', status: { state: 'TASK_STATE_SUBMITTED' } } },
      { statusUpdate: { ...ids, status: { state: 'TASK_STATE_WORKING' } } },
      {
        statusUpdate: {
          ...ids,
          status: {
            state: 'TASK_STATE_WORKING',
            message: {
              messageId: 'r:run-resumed:m-resumed',
              contextId: 't',
              taskId: 'r',
              role: 'ROLE_AGENT',
              parts: [
                { text: 'The run was taken up again after its process stopped: inside the tool batch of step 2.' },
                { data: { runResumed: { from: 'tool_batch', step: 2 } }, mediaType: 'application/json' },
              ],
            },
          },
        },
      },
      { artifactUpdate: { ...ids, artifact: { artifactId: 'response', name: 'response', parts: [{ text: 'done' }] } } },
      { artifactUpdate: { ...ids, artifact: { artifactId: 'response', name: 'response', parts: [{ text: '' }] }, append: true, lastChunk: true } },
      { statusUpdate: { ...ids, status: { state: 'TASK_STATE_COMPLETED' } } },
    ]);
  });

  it('a run_resumed activity whose content it cannot read is not sent', () => {
    const without = segment(null).filter((e) => e.event_type !== 'activity_snapshot');
    expect(encodeA2a(segment({ from: 'elsewhere', step: 2 }))).toEqual(encodeA2a(without));
    expect(encodeA2a(segment(null))).toEqual(encodeA2a(without));
  });

  it('docs/protocols/a2a.md shows the frame as it is sent, whole', () => {
    const page = readFileSync(join(import.meta.dirname, '../../../docs/protocols/a2a.md'), 'utf8');
    const shown = /## A run taken up again[\s\S]*?```json\n(.*)\n```/.exec(page)?.[1];
    expect(shown).toBe(JSON.stringify(encodeA2a(segment({ from: 'tool_batch', step: 2 }))[2]));
  });
});
