import { describe, expect, it } from 'vitest';
import { MessageSchema, Messages, messageText } from '../../src/contract/message.ts';

describe('Message', () => {
  it('builds the book constructors without drawing ids', () => {
    expect(Messages.user('hi')).toEqual({ role: 'user', content: [{ type: 'text', text: 'hi' }] });
    expect(Messages.system('s', { id: 'm1' })).toEqual({ id: 'm1', role: 'system', content: [{ type: 'text', text: 's' }] });
    expect(Messages.internalSystem('x').visibility).toBe('internal');
    expect(Messages.internalUser('x', { id: 'i' })).toMatchObject({ id: 'i', role: 'user', visibility: 'internal' });
    expect(Messages.tool('c1', 'done')).toMatchObject({ role: 'tool', tool_call_id: 'c1' });
    expect(Messages.assistant('a').role).toBe('assistant');
    expect(Messages.assistantWithToolCalls('', [{ id: 'c', name: 't', arguments: {} }]).tool_calls).toHaveLength(1);
    expect('tool_calls' in Messages.assistantWithToolCalls('', [])).toBe(false);
  });

  it('omits external visibility and reads 0.6 "all" as external', () => {
    expect(MessageSchema.parse({ role: 'user', content: [], visibility: 'external' })).toEqual({ role: 'user', content: [] });
    expect('visibility' in MessageSchema.parse({ role: 'user', content: [], visibility: 'all' })).toBe(false);
    expect(JSON.stringify(MessageSchema.parse(Messages.internalSystem('x')))).toBe(
      '{"role":"system","content":[{"type":"text","text":"x"}],"visibility":"internal"}',
    );
  });

  it('concatenates text blocks', () => {
    expect(
      messageText({
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'image', source: { kind: 'url', url: 'u' } },
          { type: 'text', text: 'b' },
        ],
      }),
    ).toBe('ab');
  });

  it('rejects a bad role', () => {
    expect(MessageSchema.safeParse({ role: 'robot', content: [] }).success).toBe(false);
  });
});
