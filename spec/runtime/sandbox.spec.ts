import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolResult } from '../../src/contract/tool.ts';
import { permissionFlag, probeSandbox, type SandboxHost } from '../../src/runtime/sandbox/probe.ts';
import { discoverSkills, embeddedSkill, SKILL_SCRIPT_TOOL_ID, skillRegistry, skillTools } from '../../src/plugins/skills/index.ts';
import type { SandboxLimits } from '../../src/runtime/sandbox/run.ts';
import { openSandbox, SandboxRefused, type Sandbox } from '../../src/runtime/sandbox/tool.ts';
import type { Tool, ToolCallContext } from '../../src/runtime/tool.ts';
import {
  ATTACK_ARGS,
  ATTACK_FILES,
  listenOn,
  ATTACKS,
  argsOf,
  LANGUAGES,
  pageTable,
  shown,
  skillsFolder,
  targets,
  type Attack,
  type Language,
  type Targets,
} from './sandbox/attacks.ts';

/**
 * The sandbox target (docs/sandbox.md): every attack a Node tool, a shell script and a Python script
 * can make on the machine is contained and told to the model as an error naming what stopped it,
 * word for word as the page's table has it, while an HTTP server in this process answers throughout.
 */
const page = readFileSync(join(import.meta.dirname, '../../docs/sandbox.md'), 'utf8');
const host = (over: Partial<SandboxHost>): SandboxHost => ({
  platform: 'linux',
  uid: 0,
  nodeVersion: 'v20.20.2',
  hasProgram: () => true,
  namespaces: () => undefined,
  ...over,
});

describe('the probe: what this machine can contain', () => {
  it("refuses, in the page's words, a machine that is not Linux, lacks a program, is not root, or cannot make namespaces", () => {
    const lines = [
      probeSandbox(host({ platform: 'darwin' })),
      probeSandbox(host({ hasProgram: (p) => p !== 'setpriv' })),
      probeSandbox(host({ uid: 1000 })),
      probeSandbox(host({ namespaces: () => 'unshare: unshare failed: Operation not permitted' })),
    ].map((p) => (p.ok ? 'contained' : p.reason));
    expect(lines).toEqual([
      'the sandbox cannot contain tools on this machine: it runs a call in Linux namespaces, and this platform is darwin',
      'the sandbox cannot contain tools on this machine: it needs setpriv, which is not on PATH',
      'the sandbox cannot contain tools on this machine: it needs root to run a call as an unprivileged user in namespaces of its own, and this process runs as uid 1000',
      'the sandbox cannot contain tools on this machine: a contained process cannot start here (unshare: unshare failed: Operation not permitted)',
    ]);
    for (const line of lines)
      expect(page).toContain(
        `\`${line
          .replace('uid 1000', 'uid N')
          .replace(/darwin/, 'P')
          .replace(/setpriv/, 'X')
          .replace(/\(unshare: .*\)/, '(why)')}\``,
      );
    expect(() => openSandbox({ probe: probeSandbox(host({ uid: 1000 })) })).toThrow(SandboxRefused);
  });

  it("switches Node's permission model on with the flag the running Node knows", () => {
    expect(['v20.20.2', 'v22.12.0', 'v23.4.0', 'v23.5.0', 'v24.1.0'].map(permissionFlag)).toEqual([
      '--experimental-permission',
      '--experimental-permission',
      '--experimental-permission',
      '--permission',
      '--permission',
    ]);
  });

  it('finds this machine able to contain tools (root, util-linux, namespaces)', () => {
    expect(probeSandbox()).toEqual({ ok: true, permissionFlag: '--experimental-permission' });
  });
});

describe('the attacks, contained', () => {
  let server: Server;
  let socketServer: { close(): unknown };
  let t: Targets;
  let sandbox: Sandbox;
  const health: number[] = [];
  let polling: ReturnType<typeof setInterval>;
  const results = new Map<string, ToolResult>();

  beforeAll(async () => {
    server = createServer((_q, r) => r.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t = targets((server.address() as { port: number }).port);
    socketServer = await listenOn(t.socket);
    process.env['AWAKEN_SANDBOX_SPEC_SECRET'] = t.secret;
    polling = setInterval(() => {
      fetch(`http://127.0.0.1:${t.port}/health`).then(
        (r) => health.push(r.status),
        () => health.push(0),
      );
    }, 50);
    sandbox = openSandbox({ limits: { wallMs: 20_000, cpuSeconds: 1 } });
    const ctx = { signal: new AbortController().signal } as ToolCallContext;
    const args = ATTACK_ARGS;
    const found = skillRegistry(discoverSkills(skillsFolder()).skills);
    if (!found.ok) throw new Error(found.error);
    const scripts = (limits?: Partial<SandboxLimits>) =>
      skillTools(found.value, {}, { sandbox, ...(limits !== undefined ? { limits } : {}) }).find((x) => x.descriptor.id === SKILL_SCRIPT_TOOL_ID) as Tool;
    for (const language of LANGUAGES)
      for (const [attack] of ATTACKS) {
        const limits = attack === 'sleepForever' ? { wallMs: 3_000 } : undefined;
        if (language === 'Python skill script') {
          const input = { skill: 'attacks', script: 'scripts/attacks.py', input: argsOf(attack, t) };
          results.set(`${language} ${attack}`, (await scripts(limits).execute(input, ctx)) as ToolResult);
          continue;
        }
        const run =
          language === 'Node tool' ? { node: ATTACK_FILES[language], export: attack } : { command: ['bash', ATTACK_FILES[language]] as [string, string] };
        const tool = sandbox.tool({ id: attack, description: attack, args, run, ...(limits !== undefined ? { limits } : {}) });
        results.set(`${language} ${attack}`, (await tool.execute(argsOf(attack, t), ctx)) as ToolResult);
      }
  }, 120_000);

  afterAll(() => {
    clearInterval(polling);
    server.close();
    socketServer.close();
    delete process.env['AWAKEN_SANDBOX_SPEC_SECRET'];
    rmSync(dirname(t.secretFile), { recursive: true, force: true });
  });

  const said = (language: Language, attack: Attack): string => {
    const r = results.get(`${language} ${attack}`) as ToolResult;
    return shown(r.status === 'success' ? `success: ${JSON.stringify(r.data)}` : (r.message ?? ''), t);
  };

  it("tells the model what stopped each attack, exactly as docs/sandbox.md's table says", () => {
    const table = pageTable(page);
    const actual = Object.fromEntries(ATTACKS.map(([attack, name]) => [name, Object.fromEntries(LANGUAGES.map((l) => [l, said(l, attack)]))]));
    expect(actual).toEqual(table);
  });

  it('leaks no secret, writes nothing outside, and leaves no process behind', () => {
    for (const r of results.values()) {
      expect(JSON.stringify(r)).not.toContain(t.secret);
      expect(JSON.stringify(r)).not.toContain('the secret');
    }
    expect(existsSync(t.outside)).toBe(false);
    const sleeping = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.trim() === `sleep ${t.seconds}`);
    expect(sleeping).toEqual([]);
  });

  it('kills a call when its run is cancelled, and checks arguments before it starts anything', async () => {
    const args = z.object({ attack: z.string() });
    const tool = sandbox.tool({ id: 'waits', description: 'waits', args, run: { command: ['python3', ATTACK_FILES['Python skill script']] } });
    const controller = new AbortController();
    const t0 = performance.now();
    setTimeout(() => controller.abort(), 300);
    const thrown = async (f: () => unknown): Promise<unknown> => {
      try {
        return await f();
      } catch (e) {
        return e;
      }
    };
    const cancelled = await thrown(() => tool.execute({ attack: 'sleepForever' }, { signal: controller.signal } as ToolCallContext));
    expect(cancelled).toMatchObject({ error: { code: 'execution_failed', message: 'the call was killed: its run was cancelled' } });
    expect(performance.now() - t0).toBeLessThan(5_000);
    const refused = await thrown(() => tool.execute({ attack: 7 }, { signal: new AbortController().signal } as ToolCallContext));
    expect(refused).toMatchObject({ error: { code: 'invalid_arguments', message: 'attack: Invalid input: expected string, received number' } });
  });

  it('kept the server answering /health throughout', () => {
    expect(health.length).toBeGreaterThan(20);
    expect(health.filter((s) => s !== 200)).toEqual([]);
  });
});

describe('what else a call is held by', () => {
  it('has no descriptor of the server past stderr, its own IPC (what it leaves is gone with it), and 256 processes at most', async () => {
    const shown = (): string =>
      execFileSync('ipcs', ['-m', '-c'], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => /\bnobody\b/.test(l))
        .join('\n');
    const before = shown();
    const script = 'ipcmk -M 4096 > /dev/null; echo "$(ls /proc/self/fd | tr "\\n" " ")| $(ulimit -u)"';
    const tool = openSandbox().tool({ id: 'probe', description: 'probe', args: z.object({}), run: { command: ['bash', '-c', script] } });
    const r = (await tool.execute({}, { signal: new AbortController().signal } as ToolCallContext)) as ToolResult;
    // ls lists its own descriptor for /proc/self/fd as 3.
    expect(r).toMatchObject({ status: 'success', data: '0 1 2 3 | 256\n' });
    expect(shown()).toBe(before);
  });
});

describe('a server that dies', () => {
  it('takes its sandboxed calls with it: kill -9 the process that started a call, and nothing of the call is left', async () => {
    const seconds = String(8_000 + (process.pid % 1_000));
    const sleeping = (): number =>
      execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => l.trim() === `sleep ${seconds}`).length;
    const script = `import { openSandbox } from ${JSON.stringify(join(import.meta.dirname, '../../src/runtime/sandbox/tool.ts'))};
import { z } from 'zod';
const tool = openSandbox().tool({ id: 'sleeps', description: 'sleeps', args: z.object({}), run: { command: ['sleep', '${seconds}'] } });
await tool.execute({}, { signal: new AbortController().signal });`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: join(import.meta.dirname, '../..'),
      stdio: 'ignore',
    });
    for (let i = 0; i < 400 && sleeping() === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(sleeping()).toBe(1);
    child.kill('SIGKILL');
    for (let i = 0; i < 100 && sleeping() > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(sleeping()).toBe(0);
  }, 60_000);
});

describe('skill_script: a skill’s own scripts, in the sandbox', () => {
  it('is offered only with a sandbox, and runs only a .py or .sh file under a skill’s scripts/ folder, each refusal a tool error naming it', async () => {
    const root = skillsFolder();
    writeFileSync(join(root, 'attacks', 'scripts', 'tool.js'), 'process.exit(0)\n');
    writeFileSync(join(root, 'attacks', 'notes.sh'), 'echo hi\n');
    symlinkSync('../notes.sh', join(root, 'attacks', 'scripts', 'linked.sh'));
    const embedded = embeddedSkill('---\nname: inline\ndescription: In the spec.\n---\nNothing to run.\n');
    if (!embedded.ok) throw new Error(embedded.error);
    const found = skillRegistry([...discoverSkills(root).skills, embedded.value]);
    if (!found.ok) throw new Error(found.error);
    expect(skillTools(found.value).map((x) => x.descriptor.id)).toEqual(['list_skills', 'skill', 'load_skill_resource']);
    const tool = skillTools(found.value, {}, { sandbox: openSandbox() }).find((x) => x.descriptor.id === SKILL_SCRIPT_TOOL_ID) as Tool;
    const ctx = { signal: new AbortController().signal, agentSpec: {} } as ToolCallContext;
    const said = async (skill: string, script: string): Promise<string> => {
      const r = (await tool.execute({ skill, script, input: { attack: 'nothing' } }, ctx)) as ToolResult;
      return `${r.status}: ${r.message ?? JSON.stringify(r.data)}`;
    };
    const refusals = [
      await said('attacks', 'scripts/attacks.py'),
      await said('attacks', 'notes.sh'),
      await said('attacks', 'scripts/linked.sh'),
      await said('attacks', 'scripts/../../x.py'),
      await said('attacks', 'scripts/tool.js'),
      await said('attacks', 'scripts/none.py'),
      await said('inline', 'scripts/a.py'),
      await said('nobody', 'scripts/a.py'),
    ];
    expect(refusals).toEqual([
      'error: [sandbox_exit] the call exited with code 1: no attack named nothing',
      "error: 'notes.sh' is not under the skill's scripts/ folder",
      "error: 'scripts/linked.sh' is not under the skill's scripts/ folder",
      "error: 'scripts/../../x.py' leaves the skill",
      "error: 'scripts/tool.js' is neither a .py nor a .sh script",
      "error: no script 'scripts/none.py' in skill 'attacks'",
      "error: skill 'inline' is embedded in its agent's spec: it has no scripts to run",
      "error: no skill 'nobody' (skills: attacks, inline)",
    ]);
    const skillsPage = readFileSync(join(import.meta.dirname, '../../docs/plugins/skills.md'), 'utf8');
    const shownRefusals = /```text\n('notes\.sh'[\s\S]*?)\n```/.exec(skillsPage)?.[1]?.split('\n');
    expect(shownRefusals).toEqual([refusals[1], ...refusals.slice(3, 7)].map((r) => (r as string).replace(/^error: /, '')));
  });
});
