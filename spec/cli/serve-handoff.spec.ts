import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HttpAgent } from '@ag-ui/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastAssistantText } from '../support/ag-ui-client.ts';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * Handoff from `awaken serve --config` (docs/plugins/handoff.md → Try it): the doc's awaken.yaml in
 * a real server, driven by the AG-UI client over a socket. The desk agent hands the conversation to
 * the billing agent with `transfer_to_agent`; the client sees the switch and billing's answer.
 */

let server: ServeProcess;
beforeAll(async () => {
  const doc = readFileSync(join(repo, 'docs/plugins/handoff.md'), 'utf8');
  const yaml = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1] as string;
  const config = join(mkdtempSync(join(tmpdir(), 'awaken-handoff-')), 'awaken.yaml');
  writeFileSync(config, `server:\n  store: memory\n${yaml.replace('file: fixtures/', `file: ${repo}/fixtures/`)}`);
  server = await startServe(['--config', config]);
});
afterAll(async () => {
  await server?.stop();
});

describe('handoff in awaken serve --config, through the AG-UI client', () => {
  it('the desk hands off to billing with transfer_to_agent: the client sees the switch between the steps, then billing’s answer', async () => {
    const agent = new HttpAgent({ url: `${server.url}/v1/ag-ui/agents/desk/runs`, threadId: 'handoff-1' });
    agent.messages.push({ id: 'u1', role: 'user', content: 'when was my last invoice paid?' });
    const seen: string[] = [];
    agent.subscribe({
      onStepStartedEvent: () => void seen.push('step'),
      onActivitySnapshotEvent: ({ event }) => void seen.push(`${event.activityType} ${JSON.stringify(event.content)}`),
      onToolCallStartEvent: ({ event }) => void seen.push(`call ${event.toolCallName}`),
    });
    await agent.runAgent({ runId: 'handoff-run-1' });
    expect(seen).toEqual(['step', 'call transfer_to_agent', 'agent_handoff {"from":"desk","to":"billing"}', 'step']);
    expect(lastAssistantText(agent.messages)).toBe('Your last invoice was paid on 3 March.');
    // The handoff's own key is the server's: an AG-UI client is shown only the keys its agent shares (none here).
    expect(agent.state).toEqual({});
  });
});
