import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { timelineOf, transcriptRecords } from '../../src/replay/timeline.ts';
import { startServe } from '../support/serve-process.ts';
import { parseSse } from '../support/server.ts';
import { repo } from './sessions.ts';

/**
 * docs/plugins/handoff.md → Try it, as written: its `awaken.yaml` beside the repository's fixtures,
 * `npx awaken serve --config awaken.yaml`, its `curl`. The tools each inference was offered are read
 * from the run's transcript, so the server also gets `--record` (and `--port 0`, the port written
 * into the `curl`): the page's list of billing's tools is what the server offers it.
 */
const page = readFileSync(join(repo, 'docs/plugins/handoff.md'), 'utf8');
const tryIt = page.slice(page.indexOf('## Try it'));
const yaml = /```yaml\n([\s\S]*?)```/.exec(tryIt)?.[1] ?? '';
const curl = (/```sh\n([\s\S]*?)```/.exec(tryIt)?.[1] ?? '').replace(/\\\n\s*/g, '').trim();

/** Runs the page's session on `config`; the stream the `curl` printed and the tools of each inference. */
async function session(config: string): Promise<{ stream: string; tools: string[][] }> {
  const cwd = mkdtempSync(join(tmpdir(), 'awaken-handoff-doc-'));
  symlinkSync(join(repo, 'fixtures'), join(cwd, 'fixtures'));
  writeFileSync(join(cwd, 'awaken.yaml'), config);
  const server = await startServe(['--config', 'awaken.yaml', '--record', './runs'], {}, cwd);
  try {
    const url = server.url;
    const r = spawnSync('bash', ['-c', curl.replace('http://127.0.0.1:3000', url)], { cwd, encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(0);
    // The transcript is written when the run ends.
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && readdirSync(cwd).includes('runs') === false) await new Promise((res) => setTimeout(res, 50));
    // Written to a `.partial` file, then renamed: only a whole one counts.
    const written = (): string[] => readdirSync(join(cwd, 'runs')).filter((f) => f.endsWith('.jsonl'));
    while (Date.now() < deadline && written().length === 0) await new Promise((res) => setTimeout(res, 50));
    const [file] = written();
    const timeline = timelineOf(transcriptRecords(readFileSync(join(cwd, 'runs', file as string), 'utf8')));
    return { stream: r.stdout, tools: timeline.steps.flatMap((s) => s.inference.requests.map((q) => [...q.tools])) };
  } finally {
    await server.stop();
  }
}

describe('docs/plugins/handoff.md → Try it', () => {
  it('the desk hands over to billing, which is offered the tools the page lists — not transfer_to_agent', async () => {
    expect(curl).toMatch(/^curl -N http:\/\/127\.0\.0\.1:3000\/v1\/runs /);
    const { stream, tools } = await session(yaml);
    const events = parseSse(stream).map((f) => JSON.parse(f.data) as { event_type: string; activity_type?: string; content?: unknown });
    const handoff = events.findIndex((e) => e.event_type === 'activity_snapshot' && e.activity_type === 'agent_handoff');
    expect(events[handoff]?.content).toEqual({ from: 'desk', to: 'billing' });
    expect(events.slice(handoff + 1).find((e) => e.event_type === 'step_start')).toBeDefined();
    // "it is offered every tool the server gives configured agents: `Read`, …, `get_weather`."
    const listed = /every tool the server gives configured agents: ([^.]*)\./.exec(page.replace(/\n/g, ' '))?.[1] ?? '';
    const billing = [...listed.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);
    expect(billing).toEqual(['Read', 'Write', 'confirm_action', 'echo', 'fail', 'get_weather']);
    expect(tools).toEqual([['transfer_to_agent'], billing]);
  });

  it('with agent_handoff in billing’s plugin_ids too, billing is offered transfer_to_agent (it can hand back)', async () => {
    const both = yaml.replace(
      '    system_prompt: You answer billing questions.\n',
      '    system_prompt: You answer billing questions.\n    plugin_ids: [agent_handoff]\n',
    );
    expect(both).not.toBe(yaml);
    const { tools } = await session(both);
    expect(tools[1]).toContain('transfer_to_agent');
  });
});
