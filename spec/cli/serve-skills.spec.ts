import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe, type ServeProcess } from '../support/serve-process.ts';
import { parseSse } from '../support/server.ts';

/**
 * Skills from `awaken serve --config` (docs/plugins/skills.md → In awaken serve): `skills.dirs`
 * names a directory of skills, relative to the config file; an agent naming skills-discovery sees
 * them, activates one over a real socket, and a bad SKILL.md there is a warning in the log, not a
 * failed start.
 */

let server: ServeProcess;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-serve-skills-'));
  mkdirSync(join(dir, 'skills/triage'), { recursive: true });
  mkdirSync(join(dir, 'skills/broken'), { recursive: true });
  writeFileSync(join(dir, 'skills/triage/SKILL.md'), '---\nname: triage\ndescription: Sorts incoming issues by urgency\n---\nLabel each issue P1, P2 or P3.\n');
  writeFileSync(join(dir, 'skills/broken/SKILL.md'), 'no front matter');
  writeFileSync(
    join(dir, 'script.yaml'),
    ['- tool_calls: [ { id: call_activate, name: skill, arguments: { skill: triage } } ]', '- text: Triaged with the skill.'].join('\n'),
  );
  writeFileSync(
    join(dir, 'awaken.yaml'),
    [
      'server: { store: memory }',
      'skills: { dirs: [ ./skills ] }',
      'providers: { triager: { kind: scripted, file: script.yaml } }',
      'models: { triager: { provider: triager, model_name: triager } }',
      'agents:',
      '  - { id: triager, model: triager, plugin_ids: [skills-discovery, skills-active-instructions], allowed_tools: [skill, list_skills, load_skill_resource] }',
    ].join('\n'),
  );
  server = await startServe(['--config', join(dir, 'awaken.yaml')]);
});
afterAll(async () => {
  await server.stop();
});

describe('skills in awaken serve --config', () => {
  it('an agent activates a skill of the configured directory; a bad SKILL.md is a warning in the log', async () => {
    expect(server.log()).toContain('skills: triage (from ');
    expect(server.log()).toMatch(/skill skipped: .*broken\/SKILL\.md/);
    const r = await fetch(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ threadId: 's1', agentId: 'triager', messages: [{ role: 'user', content: 'triage these' }] }),
    });
    const events = parseSse(await r.text()).map(
      (f) => JSON.parse(f.data) as { event_type: string; id?: string; result?: { status: string; data: { skill_id: string; instructions: string } } },
    );
    const done = events.find((e) => e.event_type === 'tool_call_done' && e.id === 'call_activate');
    expect(done?.result).toMatchObject({ status: 'success', data: { skill_id: 'triage', instructions: 'Label each issue P1, P2 or P3.' } });
    expect(events.at(-1)).toMatchObject({ event_type: 'run_finish', termination: { type: 'natural_end' } });
  });
});
