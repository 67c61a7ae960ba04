import { describe, expect, it } from 'vitest';
import { a2uiUserActionOf, formatA2uiUserAction } from '../../src/contract/a2ui.ts';
import { Messages } from '../../src/contract/message.ts';
import { decodeAgUiInput } from '../../src/protocols/ag-ui/request.ts';

/**
 * A click in an A2UI surface over AG-UI: `forwardedProps.a2uiAction.userAction`, as CopilotKit's
 * renderer sends it, is one user message worded as `@ag-ui/a2ui-middleware` 0.0.10's
 * `formatUserActionResult` words it (its branches: a component or none, a context or none, a name
 * and a surface or their stand-ins).
 */
describe('an A2UI user action', () => {
  it.each([
    [
      { name: 'order.submit', surfaceId: 'order', sourceComponentId: 'submit', context: { name: 'Ada' }, timestamp: 't' },
      'User performed action "order.submit" on surface "order" (component: submit). Context: {"name":"Ada"}',
    ],
    [{ name: 'refresh', surfaceId: 'dash' }, 'User performed action "refresh" on surface "dash". Context: {}'],
    [{ sourceComponentId: '', context: {} }, 'User performed action "unknown_action" on surface "unknown_surface". Context: {}'],
    [{ name: 'pick', surfaceId: 's', context: { tags: ['a', 'b'], n: 2 } }, 'User performed action "pick" on surface "s". Context: {"tags":["a","b"],"n":2}'],
  ])('%j is worded as the middleware words it', (action, text) => {
    expect(formatA2uiUserAction(action)).toBe(text);
  });

  it('is read from forwardedProps.a2uiAction.userAction, and from nothing else', () => {
    expect(a2uiUserActionOf({ a2uiAction: { userAction: { name: 'x' } } })).toEqual({ name: 'x' });
    for (const props of [undefined, null, {}, { a2uiAction: {} }, { a2uiAction: { userAction: 'x' } }, { userAction: { name: 'x' } }])
      expect(a2uiUserActionOf(props as never)).toBeUndefined();
  });

  it('decoded, it is one user message after the client’s, under an id of the run (a request sent twice adds it once)', () => {
    const decoded = decodeAgUiInput(
      {
        threadId: 't',
        runId: 'r2',
        messages: [
          { id: 'u1', role: 'user', content: 'an order form' },
          { id: 'a2ui-surface-c1', role: 'activity', activityType: 'a2ui-surface', content: { a2ui_operations: [] } },
        ],
        forwardedProps: { a2uiAction: { userAction: { name: 'order.submit', surfaceId: 'order', sourceComponentId: 'submit', context: { name: 'Ada' } } } },
      },
      0,
    );
    expect(decoded.ok && decoded.value.messages).toEqual([
      { id: 'u1', message: Messages.user('an order form') },
      { id: 'a2ui-action-r2', message: Messages.user('User performed action "order.submit" on surface "order" (component: submit). Context: {"name":"Ada"}') },
    ]);
  });
});
