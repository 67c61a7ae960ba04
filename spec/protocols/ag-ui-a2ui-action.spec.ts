import { describe, expect, it } from 'vitest';
import { A2UI_CONTEXT_MAX_CHARS, a2uiUserActionOf, formatA2uiUserAction } from '../../src/contract/a2ui.ts';
import { Messages } from '../../src/contract/message.ts';
import { ok } from '../../src/contract/result.ts';
import { decodeAgUiInput } from '../../src/protocols/ag-ui/request.ts';
import { json, testServer } from '../support/server.ts';

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
    expect(a2uiUserActionOf({ a2uiAction: { userAction: { name: 'x' } } })).toEqual(ok({ name: 'x' }));
    for (const props of [undefined, null, 'text', [], {}, { userAction: { name: 'x' } }, { a2uiAction: undefined }])
      expect(a2uiUserActionOf(props as never)).toEqual(ok(undefined));
  });

  it('a malformed action is refused, naming its field: it is not dropped, and what the model reads of it is bounded', () => {
    const refused = (forwardedProps: unknown, runId = 'r2') => {
      const decoded = decodeAgUiInput({ threadId: 't', runId, messages: [], forwardedProps }, 0);
      return decoded.ok ? 'accepted' : decoded.error;
    };
    const issue = (path: string, message: string) => ({ code: 'invalid_value', issues: [{ path, message }] });
    expect(refused({ a2uiAction: {} })).toEqual(issue('forwardedProps.a2uiAction.userAction', 'Invalid input: expected object, received undefined'));
    expect(refused({ a2uiAction: { userAction: 'submit' } })).toEqual(
      issue('forwardedProps.a2uiAction.userAction', 'Invalid input: expected object, received string'),
    );
    expect(refused({ a2uiAction: null })).toEqual(issue('forwardedProps.a2uiAction', 'Invalid input: expected object, received null'));
    expect(refused({ a2uiAction: { userAction: { name: 5, surfaceId: 'order' } } })).toEqual(
      issue('forwardedProps.a2uiAction.userAction.name', 'Invalid input: expected string, received number'),
    );
    expect(refused({ a2uiAction: { userAction: { name: 'x'.repeat(201), surfaceId: 'order' } } })).toEqual(
      issue('forwardedProps.a2uiAction.userAction.name', 'Too big: expected string to have <=200 characters'),
    );
    expect(refused({ a2uiAction: { userAction: { name: 'pick', surfaceId: 'order', context: { text: 'x'.repeat(A2UI_CONTEXT_MAX_CHARS) } } } })).toEqual(
      issue('forwardedProps.a2uiAction.userAction.context', `at most ${A2UI_CONTEXT_MAX_CHARS} characters of JSON`),
    );
    // The click's message is kept under an id of the run, so a retried request adds it once: a run
    // id that cannot make that id is refused rather than given a fresh one.
    expect(refused({ a2uiAction: { userAction: { name: 'pick', surfaceId: 'order' } } }, 'run 2')).toEqual(
      issue('runId', 'a run that carries forwardedProps.a2uiAction needs an id of letters, digits and ._:- (at most 188 characters)'),
    );
    expect(refused({ a2uiAction: { userAction: { name: 'pick', surfaceId: 'order' } } }, 'r'.repeat(188))).toBe('accepted');
    expect(refused({ a2uiAction: { userAction: { name: 'pick', surfaceId: 'order' } } }, 'r'.repeat(189))).not.toBe('accepted');
    // Without an action, any run id the schema takes is still taken.
    expect(refused({ other: true }, 'run 2')).toBe('accepted');
  });

  it('over HTTP, a malformed action is a 400 naming the field, and nothing is stored', async () => {
    const s = testServer([{ text: 'never' }]);
    const res = await s.app.request(
      '/v1/ag-ui/run',
      json({
        threadId: 'a2ui-bad',
        runId: 'r1',
        messages: [{ id: 'u1', role: 'user', content: 'go' }],
        forwardedProps: { a2uiAction: { userAction: { name: ['x'] } } },
      }),
    );
    expect({ status: res.status, body: await res.json() }).toEqual({
      status: 400,
      body: {
        error: 'forwardedProps.a2uiAction.userAction.name: Invalid input: expected string, received array',
        code: 'invalid_request',
        field: 'forwardedProps.a2uiAction.userAction.name',
      },
    });
    expect(s.llm.requests).toEqual([]);
    expect((await s.app.request('/v1/threads/a2ui-bad/messages')).status).toBe(404);
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
