import { closeSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';
import { parseSse } from '../support/server.ts';
import { cli } from '../support/cli.ts';

/**
 * What a prompt can make `awaken serve` read from a skill (docs/plugins/skills.md → Resources): a
 * resource over `skills.max_resource_bytes` is refused unread, and a run reads at most
 * `skills.max_resource_reads` resources — each a tool error the model reads — so a 60 MB file in a
 * skill directory costs the server neither its memory nor a 180 MB transcript.
 */

const BIG = 60 * 1024 * 1024;
let server: ServeProcess;
let record: string;

/** The server's resident memory, in bytes (Linux: /proc); 0 once it is gone. */
function rssOf(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-skill-limits-'));
  record = join(dir, 'transcripts');
  mkdirSync(record);
  mkdirSync(join(dir, 'skills/huge/data'), { recursive: true });
  writeFileSync(join(dir, 'skills/huge/SKILL.md'), '---\nname: huge\ndescription: Holds a large data file\n---\nRead data/big.bin.\n');
  writeFileSync(join(dir, 'skills/huge/notes.md'), 'Small notes.');
  // 60 MB without writing them: a sparse file.
  const fd = openSync(join(dir, 'skills/huge/data/big.bin'), 'w');
  ftruncateSync(fd, BIG);
  closeSync(fd);
  const read = (id: string, path: string): string => `{ id: ${id}, name: load_skill_resource, arguments: { skill: huge, path: ${path} } }`;
  writeFileSync(
    join(dir, 'script.yaml'),
    [
      // Three at once, as a model asked to read the file three times does.
      `- tool_calls: [ ${read('big1', 'data/big.bin')}, ${read('big2', 'data/big.bin')}, ${read('big3', './data/big.bin')} ]`,
      `- tool_calls: [ ${read('n1', 'notes.md')}, ${read('n2', 'notes.md')}, ${read('n3', 'notes.md')}, ${read('n4', 'notes.md')} ]`,
      '- text: Read what I could.',
    ].join('\n'),
  );
  writeFileSync(
    join(dir, 'awaken.yaml'),
    [
      'server: { store: memory }',
      'skills: { dirs: [ ./skills ], max_resource_reads: 3 }',
      'providers: { reader: { kind: scripted, file: script.yaml } }',
      'models: { reader: { provider: reader, model_name: reader } }',
      'agents:',
      '  - { id: reader, model: reader, plugin_ids: [skills-discovery, skills-active-instructions], allowed_tools: [load_skill_resource] }',
    ].join('\n'),
  );
  server = await startServe(['--config', join(dir, 'awaken.yaml'), '--record', record]);
});
afterAll(async () => {
  await server?.stop();
});

describe('skill resources in awaken serve are capped', () => {
  it('an over-cap resource and reads past the count are tool errors the model reads; memory and the transcript stay small', async () => {
    const before = rssOf(server.child.pid as number);
    expect(before).toBeGreaterThan(0);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(server.child.pid as number))), 20);
    const r = await fetch(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ threadId: 'big', agentId: 'reader', messages: [{ role: 'user', content: 'read the big file' }] }),
    });
    const events = parseSse(await r.text()).map((f) => JSON.parse(f.data) as { event_type: string; id?: string; result?: unknown; termination?: unknown });
    clearInterval(sampler);
    peak = Math.max(peak, rssOf(server.child.pid as number));
    const result = (id: string): unknown => events.find((e) => e.event_type === 'tool_call_done' && e.id === id)?.result;
    const tooBig = (path: string) => ({
      tool_name: 'load_skill_resource',
      status: 'error',
      data: null,
      message: `'${path}' of skill 'huge' is ${BIG} bytes, more than a resource read may return (262144 bytes: skills.max_resource_bytes)`,
    });
    expect(result('big1')).toEqual(tooBig('data/big.bin'));
    expect(result('big2')).toEqual(tooBig('data/big.bin'));
    expect(result('big3')).toEqual(tooBig('data/big.bin'));
    for (const id of ['n1', 'n2', 'n3'])
      expect(result(id), id).toEqual({
        tool_name: 'load_skill_resource',
        status: 'success',
        data: { skill_id: 'huge', path: 'notes.md', content: 'Small notes.' },
        message: null,
      });
    expect(result('n4')).toEqual({
      tool_name: 'load_skill_resource',
      status: 'error',
      data: null,
      message: 'this run has read 3 skill resources, as many as a run may read (skills.max_resource_reads)',
    });
    // docs/plugins/skills.md quotes both as the model reads them.
    const doc = readFileSync(join(repo, 'docs/plugins/skills.md'), 'utf8');
    expect(doc).toContain(
      [
        '  ```text',
        `  ${tooBig('data/big.bin').message}`,
        '  this run has read 3 skill resources, as many as a run may read (skills.max_resource_reads)',
        '  ```',
      ].join('\n'),
    );
    expect(events.at(-1)).toMatchObject({ event_type: 'run_finish', termination: { type: 'natural_end' } });
    // Unbounded, one 60 MB read took the server from ~114 MB to ~1 GB, three to 2.5 GB.
    expect(peak - before).toBeLessThan(150 * 1024 * 1024);
    // The transcript is written when the run ends; unbounded it held each read three times over.
    const deadline = Date.now() + 10_000;
    // A transcript is written to a `.partial` file, then renamed: only a whole one counts.
    const written = (): string[] => readdirSync(record).filter((f) => f.endsWith('.jsonl'));
    while (written().length === 0 && Date.now() < deadline) await new Promise((d) => setTimeout(d, 50));
    const files = written();
    expect(files).toHaveLength(1);
    expect(statSync(join(record, files[0] as string)).size).toBeLessThan(1024 * 1024);
  });
});

describe('the skills caps in the config file', () => {
  it('a bad value or an unknown key beside them stops the start with one line naming the field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-skill-limits-config-'));
    const file = join(dir, 'awaken.yaml');
    writeFileSync(file, 'skills: { max_resource_reads: 0 }\n');
    expect(await cli('serve', '--config', file)).toEqual({
      code: 65,
      out: '',
      err: `awaken serve: ${file}: skills.max_resource_reads: Too small: expected number to be >=1\n`,
    });
    writeFileSync(file, 'skills: { max_resource_size: 10 }\n');
    expect(await cli('serve', '--config', file)).toEqual({ code: 65, out: '', err: `awaken serve: ${file}: skills.max_resource_size: unknown field\n` });
  });
});
