import { describe, expect, it } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { collectStream } from '../../src/runtime/llm.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { perConversation } from '../../src/providers/per-conversation.ts';

const ask = (first: string, later: number) => ({
  model: 'm',
  tools: [],
  messages: [
    Messages.system('sys'),
    Messages.user('q', { id: first }),
    ...Array.from({ length: later }, (_, i) => Messages.assistant(`a${i}`, { id: `${first}-a${i}` })),
  ],
});
const text = async (llm: ReturnType<typeof perConversation>, req: ReturnType<typeof ask>): Promise<string> =>
  (await collectStream(llm.stream(req))).content.map((b) => (b.type === 'text' ? b.text : '')).join('');

describe('perConversation', () => {
  it('runs the script from its start in each conversation, step by step within one', async () => {
    const llm = perConversation(() => new ScriptedLlm([{ text: 'one' }, { text: 'two' }]));
    expect(await text(llm, ask('t1', 0))).toBe('one');
    expect(await text(llm, ask('t2', 0))).toBe('one');
    expect(await text(llm, ask('t1', 1))).toBe('two');
    expect(await text(llm, ask('t2', 1))).toBe('two');
    expect(await text(llm, ask('t1', 2))).toBe('Done.');
  });

  it('forgets the oldest conversation beyond its capacity; taken up again, it goes on from its assistant turns', async () => {
    const script = [{ text: 'one' }, { text: 'two' }, { text: 'three' }];
    const llm = perConversation((taken) => new ScriptedLlm(script.slice(taken)), { capacity: 1 });
    expect(await text(llm, ask('t1', 0))).toBe('one');
    expect(await text(llm, ask('t2', 0))).toBe('one');
    expect(await text(llm, ask('t1', 1))).toBe('two');
    expect(await text(llm, ask('t1', 2))).toBe('three');
  });

  it('a conversation is its thread: the same message id in two threads, a message placed at the head of a request, a thread begun again', async () => {
    const llm = perConversation((taken) => new ScriptedLlm([{ text: 'one' }, { text: 'two' }, { text: 'three' }].slice(taken)));
    const on = (threadId: string, req: ReturnType<typeof ask>) => ({ ...req, threadId });
    expect(await text(llm, on('a', ask('m', 0)))).toBe('one');
    expect(await text(llm, on('b', ask('m', 0)))).toBe('one');
    const placed = ask('m', 1);
    placed.messages.splice(1, 0, { ...Messages.user('a reminder', { id: 'injected' }), visibility: 'internal' });
    expect(await text(llm, on('a', placed))).toBe('two');
    expect(await text(llm, on('a', ask('m', 2)))).toBe('three');
    // Deleted and begun again under the same id: another first message, no assistant turn yet.
    expect(await text(llm, on('b', ask('n', 0)))).toBe('one');
  });

  it('a conversation first seen with turns taken (a thread taken up after a restart) goes on from there', async () => {
    const llm = perConversation((taken) => new ScriptedLlm([{ text: 'one' }, { text: 'two' }, { text: 'three' }].slice(taken)));
    expect(await text(llm, ask('t1', 2))).toBe('three');
  });
});
