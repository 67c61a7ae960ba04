import { describe, expect, it } from 'vitest';
import { json, testServer } from '../support/server.ts';

/** What a hostile or careless client can no longer do over HTTP (issue: the server under faults, findings 5 and 6). */
describe('requests a page on another site could send without a preflight', () => {
  const forms: [string, Record<string, string>, string | undefined][] = [
    ['a form post', { 'content-type': 'application/x-www-form-urlencoded' }, 'a=1'],
    ['a multipart form', { 'content-type': 'multipart/form-data; boundary=x' }, '--x--'],
    ['text/plain', { 'content-type': 'text/plain' }, '{}'],
    ['no body and no type', {}, undefined],
  ];
  for (const [name, headers, body] of forms) {
    it(`${name} cannot cancel a run or interrupt an AG-UI thread: 415 naming the content type`, async () => {
      const s = testServer([]);
      for (const path of ['/v1/runs/r1/cancel', '/v1/ag-ui/threads/t1/interrupt', '/v1/a2a/tasks/x:cancel', '/v1/runs']) {
        const r = await s.app.request(path, { method: 'POST', headers, ...(body !== undefined ? { body } : {}) });
        expect(r.status, path).toBe(415);
        expect(await r.json(), path).toMatchObject({ code: 'unsupported_media_type', field: 'content-type' });
      }
    });
  }

  it('a body-less POST with a JSON type, or with X-Awaken-Request, reaches the route', async () => {
    const s = testServer([]);
    expect((await s.app.request('/v1/runs/r1/cancel', { method: 'POST', headers: { 'content-type': 'application/json' } })).status).toBe(404);
    expect((await s.app.request('/v1/runs/r1/cancel', { method: 'POST', headers: { 'x-awaken-request': '1' } })).status).toBe(404);
    expect((await s.app.request('/v1/runs/r1/cancel', { method: 'POST', headers: { 'content-type': 'application/vnd.api+json; charset=utf-8' } })).status).toBe(404);
  });
});

describe('following a thread', () => {
  it('a stream on a thread that does not exist is a 404, not an open stream', async () => {
    const s = testServer([]);
    const r = await s.app.request('/v1/threads/nobody/stream');
    expect(r.status).toBe(404);
    expect(await r.json()).toMatchObject({ code: 'thread_not_found' });
  });

  it('a thread created but not yet run, or one with a run starting, can be followed', async () => {
    const s = testServer([{ text: 'hi' }]);
    expect((await s.app.request('/v1/threads', json({ id: 'made' }))).status).toBe(201);
    const r = await s.app.request('/v1/threads/made/stream');
    expect(r.status).toBe(200);
    await r.body?.cancel();
  });
});
