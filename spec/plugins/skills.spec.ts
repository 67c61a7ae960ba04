import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { permissionPlugin } from '../../src/plugins/permission.ts';
import {
  configuredSkills,
  DEFAULT_SKILL_RESOURCE_LIMITS,
  discoverSkills,
  embeddedSkill,
  parseSkillMd,
  skillRegistry,
  skillsSubsystem,
  type Skill,
} from '../../src/plugins/skills/index.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { fuzzPlugin } from '../../src/testing/fuzz-plugin.ts';
import { echoTool, harness } from '../support/runtime.ts';

/** The book's example SKILL.md (使用 Skills 子系统, step 1). */
const MY_SKILL = `---
name: my-skill
description: Helps with data analysis tasks
allowed-tools: read_file web_search
---
# My Skill

When this skill is active, focus on data analysis.
Use read_file to load datasets and web_search for reference material.
`;

function skillsDir(): string {
  const root = mkdtempSync(join(tmpdir(), 'awaken-skills-'));
  const put = (path: string, text: string) => {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  put('my-skill/SKILL.md', MY_SKILL);
  put('my-skill/references/guide.md', 'Load CSV files first.');
  put('echoer/SKILL.md', '---\nname: echoer\ndescription: Echoes things\nallowed-tools: [echo]\n---\nAlways echo the user.\n');
  put('broken/SKILL.md', 'no front matter here');
  put('renamed/SKILL.md', '---\nname: other-name\ndescription: x\n---\nbody');
  put('bad-name/SKILL.md', '---\nname: Bad_Name\ndescription: x\n---\nbody');
  put('no-skill-here/readme.txt', 'not a skill');
  writeFileSync(join(root, 'secret.txt'), 'outside the skill');
  symlinkSync(join(root, 'secret.txt'), join(root, 'my-skill', 'references', 'escape.md'));
  return root;
}

const registryOf = (skills: readonly Skill[]) => {
  const r = skillRegistry(skills);
  if (!r.ok) throw new Error(r.error);
  return r.value;
};

describe('SKILL.md and discovery (book: 使用 Skills 子系统)', () => {
  it('parses the book’s SKILL.md: front matter fields, allowed tools, the body as instructions', () => {
    const doc = parseSkillMd(MY_SKILL);
    expect(doc).toEqual({
      ok: true,
      value: {
        name: 'my-skill',
        description: 'Helps with data analysis tasks',
        allowedTools: ['read_file', 'web_search'],
        metadata: {},
        instructions: '# My Skill\n\nWhen this skill is active, focus on data analysis.\nUse read_file to load datasets and web_search for reference material.',
      },
    });
  });

  it.each([
    ['no front matter', 'just text', /^no front matter/],
    ['no name', '---\ndescription: x\n---\n', /^name: /],
    ['a bad name', '---\nname: My Skill\ndescription: x\n---\n', /^name: lowercase letters/],
    ['an empty description', '---\nname: a\ndescription: " "\n---\n', /^description: /],
    ['an unknown field', '---\nname: a\ndescription: x\nversion: 2\n---\n', /version/],
    ['front matter that is not YAML', '---\nname: [a\n---\n', /^front matter is not YAML/],
  ])('refuses %s, naming the field', (_what, text, message) => {
    const r = parseSkillMd(text);
    expect(!r.ok && r.error).toMatch(message);
  });

  it('discovers the skills of a directory; bad files are warnings, never a crash', () => {
    const root = skillsDir();
    const found = discoverSkills(root);
    expect(found.skills.map((s) => s.name)).toEqual(['echoer', 'my-skill']);
    expect(found.warnings).toHaveLength(3);
    expect(found.warnings.join('\n')).toMatch(/bad-name\/SKILL\.md: name: lowercase/);
    expect(found.warnings.join('\n')).toMatch(/broken\/SKILL\.md: no front matter/);
    expect(found.warnings.join('\n')).toMatch(/renamed\/SKILL\.md: name 'other-name' differs from its directory 'renamed'/);
    expect(discoverSkills(join(root, 'nowhere'))).toMatchObject({ skills: [], warnings: [expect.stringMatching(/cannot read the skills directory/)] });
  });

  it('reads resources inside the skill; a path out of it is refused, by .., by an absolute path, or through a symlink', () => {
    const skill = discoverSkills(skillsDir()).skills.find((s) => s.name === 'my-skill') as Skill;
    // A symlink is not listed as a resource, and reading through it is refused.
    expect(skill.resources()).toEqual(['references/guide.md']);
    expect(skill.resource('references/guide.md')).toEqual({ ok: true, value: 'Load CSV files first.' });
    expect(skill.resource('./references//guide.md')).toEqual({ ok: true, value: 'Load CSV files first.' });
    expect(skill.resource('../../secret.txt')).toEqual({ ok: false, error: "'../../secret.txt' leaves the skill" });
    expect(skill.resource('references/../../secret.txt').ok).toBe(false);
    expect(skill.resource('/etc/passwd')).toEqual({ ok: false, error: "'/etc/passwd' is not a path inside the skill" });
    expect(skill.resource('references/escape.md')).toEqual({ ok: false, error: "'references/escape.md' leaves the skill" });
    expect(skill.resource('references/none.md')).toEqual({ ok: false, error: "no resource 'references/none.md' in skill 'my-skill'" });
  });

  it('embedded skills (compiled in) work the same; a registry refuses a name twice', () => {
    const builtin = embeddedSkill(
      '---\nname: builtin-skill\ndescription: A compiled-in skill\nallowed-tools: read_file\n---\nBuiltin Skill\n\nFollow these instructions when active.\n',
      { 'assets/a.txt': 'A' },
    );
    if (!builtin.ok) throw new Error(builtin.error);
    expect(builtin.value.resource('assets/a.txt')).toEqual({ ok: true, value: 'A' });
    expect(builtin.value.resource('../x').ok).toBe(false);
    expect(embeddedSkill('---\nname: x\ndescription: y\n---\n', { '../up': 'no' })).toEqual({ ok: false, error: "resource '../up' leaves the skill" });
    expect(skillRegistry([builtin.value, builtin.value])).toEqual({ ok: false, error: "skill 'builtin-skill' is registered twice" });
  });
});

describe('the skills subsystem in a run', () => {
  const call = (id: string, name: string, args: object) => ({ tool_calls: [{ id, name, arguments: args }] });

  it('the catalog is in context; list, activate, read; the active skill’s instructions are injected on later inferences', async () => {
    const registry = registryOf(discoverSkills(skillsDir()).skills);
    const { discovery, activeInstructions } = skillsSubsystem(registry);
    const h = harness(
      [
        call('l1', 'list_skills', {}),
        call('a1', 'skill', { skill: 'my-skill' }),
        call('r1', 'load_skill_resource', { skill: 'my-skill', path: 'references/guide.md' }),
        call('r2', 'load_skill_resource', { skill: 'my-skill', path: '../echoer/SKILL.md' }),
        { text: 'done' },
      ],
      { tools: [echoTool], plugins: [discovery, activeInstructions] },
    );
    const r = await h.runtime.run({ messages: [Messages.user('analyse this')] }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    const text = (i: number) => JSON.stringify(h.llm.requests[i]?.messages);
    expect(text(0)).toContain('<available_skills>\\n- echoer: Echoes things\\n- my-skill: Helps with data analysis tasks\\n</available_skills>');
    expect(h.llm.requests[0]?.tools.map((t) => t.id)).toEqual(expect.arrayContaining(['list_skills', 'skill', 'load_skill_resource']));
    expect(text(1)).not.toContain('<skill name=');
    expect(text(2)).toContain('<skill name=\\"my-skill\\">\\n# My Skill');
    expect(text(4)).toContain('<skill name=\\"my-skill\\">');
    const done = h.sink.events.filter((e) => e.event_type === 'tool_call_done') as Extract<AgentEvent, { event_type: 'tool_call_done' }>[];
    expect(done.map((d) => [d.id, d.result.status])).toEqual([
      ['l1', 'success'],
      ['a1', 'success'],
      ['r1', 'success'],
      ['r2', 'error'],
    ]);
    expect(done[2]?.result.data).toEqual({ skill_id: 'my-skill', path: 'references/guide.md', content: 'Load CSV files first.' });
    expect(done[3]?.result.message).toBe("'../echoer/SKILL.md' leaves the skill");
    // Run-scoped: the next run starts with no active skill.
    const h2 = harness([{ text: 'x' }], { tools: [echoTool], plugins: [discovery, activeInstructions] });
    await h2.runtime.run({ messages: [Messages.user('again')] }, new VecEventSink());
    expect(JSON.stringify(h2.llm.requests[0]?.messages)).not.toContain('<skill name=');
  });

  it('activating a skill grants its allowed tools for the run, as permission overrides', async () => {
    const registry = registryOf(discoverSkills(skillsDir()).skills);
    const { discovery, activeInstructions } = skillsSubsystem(registry);
    const sections = { permission: { default_behavior: 'deny', rules: [{ tool: 'skill', behavior: 'allow' }] } };
    const h = harness([call('a1', 'skill', { skill: 'echoer' }), call('e1', 'echo', { text: 'hi' }), { text: 'done' }], {
      tools: [echoTool],
      plugins: [discovery, activeInstructions, permissionPlugin],
      spec: { sections: sections as never },
    });
    const r = await h.runtime.run({ threadId: 't', messages: [Messages.user('go')] }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    // Without the skill, echo is denied (default deny).
    const h3 = harness([call('e1', 'echo', { text: 'hi' }), { text: 'x' }], {
      tools: [echoTool],
      plugins: [discovery, activeInstructions, permissionPlugin],
      spec: { sections: sections as never },
    });
    const r3 = await h3.runtime.run({ messages: [Messages.user('go')] }, h3.sink);
    expect(r3.ok && r3.value.termination).toEqual({ type: 'blocked', value: "Tool 'echo' denied by permission rules" });
  });

  it('an unknown skill is an error result naming the skills there are', async () => {
    const registry = registryOf(discoverSkills(skillsDir()).skills);
    const { discovery } = skillsSubsystem(registry);
    const h = harness([call('a1', 'skill', { skill: 'nope' }), { text: 'ok' }], { tools: [echoTool], plugins: [discovery] });
    await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    const done = h.sink.events.find((e) => e.event_type === 'tool_call_done') as Extract<AgentEvent, { event_type: 'tool_call_done' }>;
    expect(done.result.message).toBe("no skill 'nope' (skills: echoer, my-skill)");
  });

  it('both plugins pass fuzzPlugin', async () => {
    const registry = registryOf(discoverSkills(skillsDir()).skills);
    const { discovery, activeInstructions } = skillsSubsystem(registry);
    for (const plugin of [discovery, activeInstructions]) {
      const report = await fuzzPlugin(plugin, { numRuns: 30, seed: 5 });
      expect([plugin.name, report.failures]).toEqual([plugin.name, []]);
    }
  });

  it('a resource over the size cap is refused unread, and a run reads at most the count cap: each a tool error the model reads', async () => {
    const root = skillsDir();
    writeFileSync(join(root, 'my-skill', 'references', 'big.md'), 'x'.repeat(40));
    const registry = registryOf(discoverSkills(root).skills);
    const { discovery } = skillsSubsystem(registry, { maxResourceBytes: 30, maxResourceReads: 2 });
    const read = (id: string, path: string) => ({ id, name: 'load_skill_resource', arguments: { skill: 'my-skill', path } });
    const script = [
      {
        tool_calls: [read('b1', 'references/big.md'), read('g1', 'references/guide.md'), read('g2', 'references/guide.md'), read('g3', 'references/guide.md')],
      },
      { text: 'ok' },
    ];
    const h = harness(script, { tools: [echoTool], plugins: [discovery] });
    await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    const done = new Map(
      (h.sink.events.filter((e) => e.event_type === 'tool_call_done') as Extract<AgentEvent, { event_type: 'tool_call_done' }>[]).map((d) => [d.id, d.result]),
    );
    expect(done.get('b1')).toEqual({
      tool_name: 'load_skill_resource',
      status: 'error',
      data: null,
      message: "'references/big.md' of skill 'my-skill' is 40 bytes, more than a resource read may return (30 bytes: skills.max_resource_bytes)",
    });
    expect(done.get('g1')).toMatchObject({ status: 'success', data: { content: 'Load CSV files first.' } });
    expect(done.get('g2')).toMatchObject({ status: 'success' });
    expect(done.get('g3')).toEqual({
      tool_name: 'load_skill_resource',
      status: 'error',
      data: null,
      message: 'this run has read 2 skill resources, as many as a run may read (skills.max_resource_reads)',
    });
    // The count is the run's: the next run of the same runtime reads again.
    const again = harness([{ tool_calls: [read('g4', 'references/guide.md')] }, { text: 'ok' }], { tools: [echoTool], plugins: [discovery] });
    await again.runtime.run({ messages: [Messages.user('go')] }, again.sink);
    expect(again.sink.events.find((e) => e.event_type === 'tool_call_done')).toMatchObject({ result: { status: 'success' } });
  });

  it('the caps default to 256 KiB and 16 reads a run; an embedded resource is capped too; an agent’s skills section sets its own', async () => {
    expect(DEFAULT_SKILL_RESOURCE_LIMITS).toEqual({ maxResourceBytes: 262_144, maxResourceReads: 16 });
    const skill_md = '---\nname: notes\ndescription: Holds notes\n---\nRead them.\n';
    const embedded = { embedded: [{ skill_md, resources: { 'a.md': 'é'.repeat(200_000), 'b.md': 'small' } }] };
    const { discovery } = configuredSkills(new Map(), { maxResourceReads: 1 });
    const read = (id: string, path: string) => ({ tool_calls: [{ id, name: 'load_skill_resource', arguments: { skill: 'notes', path } }] });
    const results = async (sections: object, script: object[]) => {
      const h = harness([...script, { text: 'ok' }] as never, { tools: [echoTool], plugins: [discovery], spec: { sections: sections as never } });
      await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
      return (h.sink.events.filter((e) => e.event_type === 'tool_call_done') as Extract<AgentEvent, { event_type: 'tool_call_done' }>[]).map(
        (d) => d.result.message ?? d.result.status,
      );
    };
    // 200,000 × 'é' is 400,000 bytes of UTF-8: over the default; the server's count (1) applies.
    expect(await results({ skills: embedded }, [read('a', 'a.md'), read('b1', 'b.md'), read('b2', 'b.md')])).toEqual([
      "'a.md' of skill 'notes' is 400000 bytes, more than a resource read may return (262144 bytes: skills.max_resource_bytes)",
      'success',
      'this run has read 1 skill resources, as many as a run may read (skills.max_resource_reads)',
    ]);
    // The agent's section wins over the server's.
    expect(
      await results({ skills: { ...embedded, max_resource_bytes: 500_000, max_resource_reads: 3 } }, [
        read('a', 'a.md'),
        read('b1', 'b.md'),
        read('b2', 'b.md'),
      ]),
    ).toEqual(['success', 'success', 'success']);
    expect(() => harness([], { tools: [echoTool], plugins: [discovery], spec: { sections: { skills: { max_resource_reads: 0 } } as never } })).toThrow(
      new Error(
        '{"code":"validation_failed","message":"agent \'agent\': invalid config section \'skills\' of plugin \'skills-discovery\': max_resource_reads: Too small: expected number to be >=1"}',
      ),
    );
  });

  it('configured skills: a server’s skills and those an agent embeds in its skills section (an embedded one of the same name wins); a bad one stops the build naming it', async () => {
    const base = registryOf(discoverSkills(skillsDir()).skills);
    const { discovery, activeInstructions } = configuredSkills(base);
    const mine = '---\nname: echoer\ndescription: The agent’s own echoer\n---\nEcho twice.\n';
    const h = harness([call('a1', 'skill', { skill: 'echoer' }), { text: 'ok' }], {
      tools: [echoTool],
      plugins: [discovery, activeInstructions],
      spec: { sections: { skills: { embedded: [{ skill_md: mine }] } } as never },
    });
    await h.runtime.run({ messages: [Messages.user('go')] }, h.sink);
    expect(JSON.stringify(h.llm.requests[0]?.messages)).toContain('- echoer: The agent’s own echoer\\n- my-skill: Helps with data analysis tasks');
    expect(JSON.stringify(h.llm.requests[1]?.messages)).toContain('Echo twice.');
    expect(() =>
      harness([], { tools: [echoTool], plugins: [discovery], spec: { sections: { skills: { embedded: [{ skill_md: 'no front matter' }] } } as never } }),
    ).toThrow(
      new Error(
        '{"code":"validation_failed","message":"agent \'agent\': invalid config section \'skills\' of plugin \'skills-discovery\': embedded.0.skill_md: no front matter: SKILL.md starts with a --- line, the YAML fields, and another --- line"}',
      ),
    );
    // Without a section, the server's skills alone.
    const plain = harness([{ text: 'x' }], { tools: [echoTool], plugins: [discovery] });
    await plain.runtime.run({ messages: [Messages.user('go')] }, new VecEventSink());
    expect(JSON.stringify(plain.llm.requests[0]?.messages)).toContain('- echoer: Echoes things');
  });
});
