import { buildResumeArray, HttpAgent } from '@ag-ui/client';
import { RunAgentInputSchema as OfficialInput } from '@ag-ui/core/schemas';
import { describe, expect, it } from 'vitest';
import { encodeAgUi, frameAgUi } from '../../src/protocols/ag-ui/encoder.ts';
import { decodeAgUiInput } from '../../src/protocols/ag-ui/request.ts';
import { eventsOf } from '../support.ts';

const NOW = 1_700_000_000_000;

describe('AG-UI RunAgentInput decoding, fed by the official HttpAgent', () => {
  it('reads the new user message, then the resume[] the client builds for the interrupt it was given', async () => {
    const bodies: unknown[] = [];
    const suspended = frameAgUi(encodeAgUi(eventsOf('run-suspension-left-waiting.events.jsonl')));
    const finished = frameAgUi(
      encodeAgUi([
        { event_type: 'run_start', thread_id: 'thread-1', run_id: 'run-2' },
        { event_type: 'run_finish', thread_id: 'thread-1', run_id: 'run-2', termination: { type: 'natural_end' } },
      ]),
    );
    const agent = new HttpAgent({
      url: 'http://agent.test/v1/ag-ui/run',
      threadId: 'thread-1',
      fetch: async (_url, init) => {
        bodies.push(JSON.parse(String(init.body)));
        return new Response(bodies.length === 1 ? suspended : finished, { headers: { 'content-type': 'text/event-stream' } });
      },
    });
    agent.messages.push({ id: 'u1', role: 'user', content: 'delete it' });
    await agent.runAgent({ runId: 'run-1' });
    expect(agent.pendingInterrupts.map((i) => i.id)).toEqual(['confirm-c1']);
    await agent.runAgent({
      runId: 'run-2',
      resume: buildResumeArray(agent.pendingInterrupts, { 'confirm-c1': { status: 'resolved', payload: { approved: true } } }),
    });

    expect(bodies).toHaveLength(2);
    for (const b of bodies) expect(OfficialInput.safeParse(b).success).toBe(true);
    const first = decodeAgUiInput(bodies[0], NOW);
    expect(first.ok && first.value.threadId).toBe('thread-1');
    expect(first.ok && first.value.messages.map((m) => ({ id: m.id, role: m.message.role, content: m.message.content }))).toEqual([
      { id: 'u1', role: 'user', content: [{ type: 'text', text: 'delete it' }] },
    ]);
    expect(first.ok && first.value.decisions).toEqual([]);
    const second = decodeAgUiInput(bodies[1], NOW);
    expect(second.ok && second.value.decisions).toEqual([
      { targetId: 'confirm-c1', decision: { decision_id: '', action: 'resume', result: { approved: true }, updated_at: NOW } },
    ]);
  });

  it('a cancelled entry or an approved: false payload cancels the call', () => {
    const r = decodeAgUiInput(
      {
        threadId: 't',
        runId: 'r',
        messages: [],
        resume: [
          { interruptId: 'a', status: 'cancelled' },
          { interruptId: 'b', status: 'resolved', payload: { approved: false, reason: 'no' } },
        ],
      },
      NOW,
    );
    expect(r.ok && r.value.decisions.map((d) => [d.targetId, d.decision.action, d.decision.result, d.decision.reason])).toEqual([
      ['a', 'cancel', { approved: false }, undefined],
      ['b', 'cancel', { approved: false, reason: 'no' }, 'no'],
    ]);
  });

  it('reads text and media parts of user messages, developer as system, and leaves the server-owned roles', () => {
    const r = decodeAgUiInput(
      {
        threadId: 't',
        runId: 'r',
        messages: [
          { id: '1', role: 'developer', content: 'be brief' },
          {
            id: '2',
            role: 'user',
            content: [
              { type: 'text', text: 'look' },
              { type: 'image', source: { type: 'url', value: 'https://x/y.png' } },
            ],
          },
          { id: '3', role: 'assistant', content: 'old answer' },
          { id: '4', role: 'tool', content: '{}', toolCallId: 'c' },
        ],
        state: { n: 1 },
      },
      NOW,
    );
    expect(r.ok && r.value.messages.map((m) => [m.message.role, m.message.content])).toEqual([
      ['system', [{ type: 'text', text: 'be brief' }]],
      [
        'user',
        [
          { type: 'text', text: 'look' },
          { type: 'image', source: { kind: 'url', url: 'https://x/y.png' } },
        ],
      ],
    ]);
    expect(r.ok && r.value.state).toEqual({ n: 1 });
  });

  it.each([
    ['no threadId', { runId: 'r', messages: [] }, 'threadId'],
    ['messages not a list', { threadId: 't', runId: 'r', messages: 'hi' }, 'messages'],
    ['a bad role', { threadId: 't', runId: 'r', messages: [{ id: '1', role: 'robot', content: 'x' }] }, 'messages.0.role'],
    ['a bad resume status', { threadId: 't', runId: 'r', messages: [], resume: [{ interruptId: 'a', status: 'maybe' }] }, 'resume.0.status'],
  ])('bad input (%s) is a typed error naming the field', (_name, body, path) => {
    const r = decodeAgUiInput(body, NOW);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error.code === 'invalid_value' && r.error.issues.map((i) => i.path)).toContain(path);
  });
});
