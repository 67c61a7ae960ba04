import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../../src/contract/event.ts';
import type { JsonValue } from '../../../src/contract/json.ts';
import { encodeA2a } from '../../../src/protocols/a2a/encoder.ts';

const resumed = (content: JsonValue): AgentEvent => ({
  event_type: 'activity_snapshot',
  message_id: 'm-resumed',
  activity_type: 'run_resumed',
  content,
  replace: true,
});

/** A run taken up again inside the tool batch of its step 2: the new segment, as the runtime emits it. */
const segment = (content: JsonValue): AgentEvent[] => [
  { event_type: 'run_start', thread_id: 't', run_id: 'r' },
  resumed(content),
  { event_type: 'step_start', message_id: 'm2' },
  { event_type: 'text_delta', delta: 'done' },
  { event_type: 'step_end' },
  { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'natural_end' } },
];

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
