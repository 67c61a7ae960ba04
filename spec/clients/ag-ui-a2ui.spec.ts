import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BaseEvent, HttpAgent, type Message } from '@ag-ui/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failOnConsole } from '../support/console.ts';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * A2UI v0.9 over AG-UI (docs/plugins/generative-ui.md → A2UI v0.9, Try it): the doc's v0.9
 * awaken.yaml in a real `awaken serve`, and `@ag-ui/client` 1.0's `HttpAgent` (which verifies every
 * event and repairs, with a warning, what it does not like). One render call is one
 * `ACTIVITY_SNAPSHOT` — the doc's, whole — and no delta; the client keeps it as an activity
 * message. A click in the surface comes back as `forwardedProps.a2uiAction` (CopilotKit's renderer
 * sends it so) and joins the thread as the user message the doc quotes.
 */

const doc = readFileSync(join(repo, 'docs/plugins/generative-ui.md'), 'utf8');
/** The doc's fenced blocks of a language, in order. */
const blocks = (lang: string): string[] => [...doc.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1] as string);

let server: ServeProcess;
beforeAll(async () => {
  const yaml = blocks('yaml')[1] as string;
  const config = join(mkdtempSync(join(tmpdir(), 'awaken-a2ui-v09-')), 'awaken.yaml');
  writeFileSync(config, `server:\n  store: memory\n${yaml.replace('file: fixtures/', `file: ${repo}/fixtures/`)}`);
  server = await startServe(['--config', config]);
});
afterAll(async () => {
  await server?.stop();
});

describe('A2UI v0.9 with @ag-ui/client HttpAgent against awaken serve', () => {
  failOnConsole(['warn']);

  it('one render call is the doc’s one ACTIVITY_SNAPSHOT, kept by the client as an activity message; a click is the doc’s user message', async () => {
    const agent = new HttpAgent({ url: `${server.url}/v1/ag-ui/agents/ui/runs`, threadId: 'a2ui-v09' });
    const events: BaseEvent[] = [];
    agent.subscribe({ onEvent: ({ event }) => void events.push(event) });
    agent.messages.push({ id: 'u1', role: 'user', content: 'show me an order form' });
    await agent.runAgent({ runId: 'r1' });

    const activities = events.filter((e) => e.type === 'ACTIVITY_SNAPSHOT' || e.type === 'ACTIVITY_DELTA');
    const wire = blocks('json').find((b) => b.includes('"ACTIVITY_SNAPSHOT"')) as string;
    expect(activities.map(({ timestamp: _t, rawEvent: _r, ...e }) => e)).toEqual([JSON.parse(wire)]);
    const shown = agent.messages.find((m) => m.role === 'activity');
    expect(shown).toEqual({ id: 'a2ui-surface-call_render', role: 'activity', activityType: 'a2ui-surface', content: JSON.parse(wire).content });

    // The click, as CopilotKit's A2UI renderer forwards it on the next run.
    const userAction = {
      name: 'order.submit',
      surfaceId: 'order-form-1',
      sourceComponentId: 'submit',
      timestamp: '2026-01-01T00:00:00.000Z',
      context: { name: 'Ada Lovelace' },
    };
    await agent.runAgent({ runId: 'r2', forwardedProps: { a2uiAction: { userAction } } });
    const history = (await (await fetch(`${server.url}/v1/ag-ui/threads/a2ui-v09/messages`)).json()) as Message[];
    const said = /```\n(User performed action [^\n]*)\n```/.exec(doc)?.[1];
    expect(history.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['show me an order form', said]);
    expect(history.at(-1)).toMatchObject({ role: 'assistant', content: 'Your order is placed, Ada Lovelace.' });
  });
});
