import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import type { JsonValue } from '../../src/contract/json.ts';
import { RUN_RESUMED, runResumedOf, runResumedText } from '../../src/protocols/resumed.ts';

const activity = (content: JsonValue, activity_type = RUN_RESUMED): AgentEvent => ({
  event_type: 'activity_snapshot',
  message_id: 'm1',
  activity_type,
  content,
  replace: true,
});

describe('a run_resumed activity, read once for every protocol that says it in words', () => {
  it.each([
    ['tool_batch', 2],
    ['inference', 3],
    ['answered', 2],
    ['step_end', 1],
  ] as const)('reads where the run went on: from %s at step %d', (from, step) => {
    expect(runResumedOf(activity({ from, step }))).toEqual({ from, step });
  });

  it('keeps where and which step only: other fields a writer adds are left out', () => {
    expect(runResumedOf(activity({ from: 'inference', step: 1, by: 'instance-2' }))).toEqual({ from: 'inference', step: 1 });
  });

  it.each([
    ['no content', null],
    ['a place it does not know', { from: 'somewhere', step: 1 }],
    ['no step', { from: 'tool_batch' }],
    ['a step that is not a count', { from: 'tool_batch', step: 1.5 }],
    ['a negative step', { from: 'tool_batch', step: -1 }],
    ['a step as text', { from: 'tool_batch', step: '2' }],
    ['not an object', 'tool_batch'],
  ])('a malformed content (%s) is no run_resumed', (_name, content) => {
    expect(runResumedOf(activity(content))).toBeUndefined();
  });

  it('another activity, or another event, is none', () => {
    expect(runResumedOf(activity({ from: 'tool_batch', step: 2 }, 'tool-call-progress'))).toBeUndefined();
    expect(runResumedOf({ event_type: 'step_start', message_id: 'm1' })).toBeUndefined();
  });

  it.each([
    ['tool_batch', 2, 'The run was taken up again after its process stopped: inside the tool batch of step 2.'],
    ['inference', 3, 'The run was taken up again after its process stopped: at the start of step 3, asking the model again.'],
    ['answered', 2, 'The run was taken up again after its process stopped: after the answer of step 2, which ends it.'],
    ['step_end', 1, 'The run was taken up again after its process stopped: at the end of step 1, whose tool calls are not taken up; it ends interrupted.'],
  ] as const)('says in one sentence where the run went on (%s)', (from, step, text) => {
    expect(runResumedText({ from, step })).toBe(text);
  });

  it.each(['a2a', 'acp', 'mcp'])('docs/protocols/%s.md lists the words for each place as they are said', (protocol) => {
    const page = readFileSync(join(import.meta.dirname, `../../docs/protocols/${protocol}.md`), 'utf8');
    const section = /## A run taken up again\n([\s\S]*?)(\n## |$)/.exec(page)?.[1] ?? '';
    // Each `from` — `words`, the words with N for the step, as the page wraps them.
    const listed = [...section.replace(/\s+/g, ' ').matchAll(/`(tool_batch|inference|answered|step_end)` — `([^`]*)`/g)].map(([, from, words]) => [
      from,
      words,
    ]);
    const prefix = 'The run was taken up again after its process stopped: ';
    const said = (['tool_batch', 'inference', 'answered', 'step_end'] as const).map((from) => [
      from,
      runResumedText({ from, step: 7 }).slice(prefix.length, -1).replace('7', 'N'),
    ]);
    expect(listed).toEqual(said);
  });
});
