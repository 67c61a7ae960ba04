import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePlugin, type PluginDefinition } from '../../src/plugins/define-plugin.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { INTERCEPT_PRECEDENCE } from '../../src/runtime/loop-keys.ts';
import { repo } from './sessions.ts';

/**
 * docs/plugins.md as a user meets it. Its first example is a whole program: copied verbatim into an
 * empty folder where `awaken-ts` is this package (the sources, by the `awaken-source` condition) and
 * `zod` is installed, type-checked with tsc under the project's own strict options, and run with
 * node; what it prints is compared whole with the page's output block. Its error lines are the
 * errors the calls it describes throw, and the intercept precedence it gives is the runtime's. The
 * worked plugin and its registration are run by spec/runtime/plugin-guide.spec.ts.
 */

const page = readFileSync(join(repo, 'docs/plugins.md'), 'utf8');

interface Block {
  readonly lang: string;
  readonly body: string;
  /** The prose line just before the block. */
  readonly after: string;
}

function blocksOf(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\w*)$/.exec(lines[i] as string);
    if (fence === null) continue;
    const after =
      lines
        .slice(0, i)
        .reverse()
        .find((l) => l.trim() !== '') ?? '';
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i] as string);
    blocks.push({ lang: fence[1] as string, body: `${body.join('\n')}\n`, after });
  }
  return blocks;
}

const blocks = blocksOf(page);
const [example, printed, errors] = blocks as [Block, Block, Block];

let folder = '';
let file = '';

beforeAll(() => {
  // An empty project: package.json, and node_modules with this package and zod (and the Node types tsc reads).
  folder = mkdtempSync(join(tmpdir(), 'awaken-plugins-doc-'));
  mkdirSync(join(folder, 'node_modules'));
  symlinkSync(repo, join(folder, 'node_modules/awaken-ts'));
  symlinkSync(join(repo, 'node_modules/zod'), join(folder, 'node_modules/zod'));
  symlinkSync(join(repo, 'node_modules/@types'), join(folder, 'node_modules/@types'));
  writeFileSync(join(folder, 'package.json'), '{ "name": "plugins-doc", "private": true, "type": "module" }\n');
  file = join(folder, 'file-guard.ts');
  writeFileSync(file, example.body);
});

afterAll(() => {
  if (folder !== '') rmSync(folder, { recursive: true, force: true });
});

describe('docs/plugins.md', () => {
  it('has the blocks this spec and the plugin guide spec run, and no other', () => {
    expect(blocks.map((b) => `${b.lang}: ${b.after}`)).toEqual([
      'ts: scripted (`ScriptedLlm`, docs/scripted-models.md), so the program runs as it is, without a key:',
      'text: It prints:',
      "text: (here a count of `'calls'`, and a plugin named `audit-log` registered as `withPlugin('audit', …)`):",
      "ts: the reason as the call's result, and the run goes on.",
      "ts: Register it with the builder and name it in the agent's `plugin_ids`:",
    ]);
  });

  it('the first example type-checks with tsc under the project options (strict, exactOptionalPropertyTypes, noImplicitReturns…): no error', () => {
    const config = ts.readConfigFile(join(repo, 'tsconfig.json'), (p) => ts.sys.readFile(p));
    const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, repo);
    const program = ts.createProgram([file], { ...options, noEmit: true });
    const source = program.getSourceFile(file);
    const diagnostics = [...program.getOptionsDiagnostics(), ...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
    expect(diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))).toEqual([]);
  }, 120_000);

  it('the first example prints, run with node, exactly the output the page shows', () => {
    const tsx = join(repo, 'node_modules/tsx/dist/esm/index.mjs');
    const r = spawnSync(process.execPath, ['--conditions=awaken-source', '--import', tsx, file], { cwd: dirname(file), encoding: 'utf8', timeout: 60_000 });
    expect({ status: r.status, stderr: r.stderr, stdout: r.stdout }).toEqual({ status: 0, stderr: '', stdout: printed.body });
  });

  it('the error lines are what the calls the page names throw, and build() answers the error the page shows', () => {
    const thrown = (f: () => unknown): string => {
      try {
        f();
      } catch (e) {
        return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
      }
      return 'nothing thrown';
    };
    const auditLog = definePlugin({ name: 'audit-log' });
    const builder = () => new AgentRuntimeBuilder().withPlugin('audit', auditLog);
    const lines = [
      thrown(() => definePlugin({ name: 'counter', countPerThread: 'calls' } as unknown as PluginDefinition)),
      thrown(() => builder().buildOrThrow()),
    ];
    expect(`${lines.join('\n')}\n`).toBe(errors.body);
    const shown = /`build\(\)`\s+returns it instead, as `(\{[^`]*\})`/.exec(page)?.[1] ?? '';
    const asJson = shown.replace(/'/g, '"').replace(/([{,]\s*)(\w+):/g, '$1"$2":');
    expect(builder().build()).toEqual(JSON.parse(asJson));
  });

  it('the intercept precedence it gives is INTERCEPT_PRECEDENCE', () => {
    const listed = /in this order \(`INTERCEPT_PRECEDENCE`\):\s+([a-z_, ]+)\./.exec(page)?.[1] ?? '';
    expect(listed.split(', ')).toEqual([...INTERCEPT_PRECEDENCE]);
  });
});
