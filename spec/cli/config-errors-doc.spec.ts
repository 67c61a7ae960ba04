import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { EXIT } from '../../src/cli/exit.ts';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * Every config error the docs show is what a user sees: the config that makes it is written to
 * `./awaken.yaml` in a directory of its own, the command runs there as a real process, and its whole
 * output (stdout, stderr, exit code) must be the documented line — found in the doc, not copied here.
 */

const bin = join(repo, 'src/cli/awaken.js');
const read = (doc: string): string => readFileSync(join(repo, doc), 'utf8');
/** The first ```yaml block of a doc, as written. */
const yamlOf = (doc: string): string => /```yaml\n([\s\S]*?)```/.exec(read(doc))?.[1] as string;

/** The one line of `doc` that starts with `prefix` (exactly one must). */
function documented(doc: string, prefix: string): string {
  const lines = read(doc)
    .split('\n')
    .filter((l) => l.startsWith(prefix));
  expect(lines, `${doc}: one line starting with ${prefix}`).toHaveLength(1);
  return lines[0] as string;
}

/** `awaken ARGS…` in a fresh directory holding `config` as awaken.yaml (or in the repository). */
function awaken(args: readonly string[], config?: string): { code: number | null; out: string; err: string } {
  let cwd = repo;
  if (config !== undefined) {
    cwd = mkdtempSync(join(tmpdir(), 'awaken-doc-config-'));
    writeFileSync(join(cwd, 'awaken.yaml'), config);
  }
  const r = spawnSync(process.execPath, [bin, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' },
    timeout: 60_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const serve = (config: string) => awaken(['serve', '--config', './awaken.yaml', '--store', 'memory', '--port', '0'], config);
const models = 'models:\n  default: { provider: demo, model_name: demo }\n';

describe('the config errors the docs show are printed as shown: one line, exit 65', () => {
  const SERVE_CASES: readonly (readonly [doc: string, field: string, config: string])[] = [
    ['docs/server.md', 'server.port', 'server:\n  port: "eighty"\n'],
    ['docs/cli.md', 'server.port', 'server:\n  port: "eighty"\n'],
    [
      'docs/server.md',
      'agents[1].model',
      'providers:\n  local: { kind: openai-compatible, base_url: "http://127.0.0.1:1/v1" }\nmodels:\n  small: { provider: local, model_name: tiny }\nagents:\n  - { id: helper, model: small }\n  - { id: other, model: big }\n',
    ],
    ['docs/server.md', 'agents[0].bogus_field', 'agents:\n  - id: helper\n    model: demo\n    bogus_field: 1\n'],
    [
      'docs/server.md',
      'agents[0].permission',
      'agents:\n  - id: helper\n    model: demo\n    plugin_ids: [permission]\n    permission: { default_behavior: deny }\n',
    ],
    ['docs/server.md', 'agents[0].sections.reminder', 'agents:\n  - id: helper\n    model: demo\n    sections:\n      reminder: { rules: [] }\n'],
    [
      'docs/server.md',
      'agents[0].sections.permision',
      'agents:\n  - id: helper\n    model: demo\n    plugin_ids: [permission]\n    sections:\n      permision: { default_behavior: deny }\n',
    ],
    ['docs/server.md', 'mailbox.lease_ms', 'mailbox:\n  lease_ms: 5000\n'],
    // The doc's own agents, each with the one mistake the doc describes.
    [
      'docs/plugins/permission.md',
      'agents[0].sections.permission.rules[0].tool',
      models + yamlOf('docs/plugins/permission.md').replace('{ tool: Read, behavior: allow }', '{ tool: "Bash(npm *", behavior: allow }'),
    ],
    [
      'docs/plugins/reminder.md',
      'agents[0].sections.reminder.rules[0].message.target',
      models + yamlOf('docs/plugins/reminder.md').replace('target: suffix_system', 'target: suffix'),
    ],
    [
      'docs/delegation.md',
      'agents[0].delegates[1]',
      models.replace('default', 'main') + yamlOf('docs/delegation.md').replace('delegates: [researcher, analyst]', 'delegates: [researcher, x]'),
    ],
    [
      'docs/plugins/state-machine.md',
      'agents[0].sections.state_machine.machines[0].transitions[1].on',
      yamlOf('docs/plugins/state-machine.md').replace(`'Write(file_path ~ "*")'`, `'Write(file_path ~ "*"'`),
    ],
  ];

  it.each(SERVE_CASES)('%s: awaken serve … %s', (doc, field, config) => {
    expect(serve(config)).toEqual({ code: EXIT.data, out: '', err: `${documented(doc, `awaken serve: ./awaken.yaml: ${field}: `)}\n` });
  });

  it('docs/bench.md: awaken bench reads its --config as serve does, and names a plugin it was not given', () => {
    const script = `scripted:${join(repo, 'examples/bench/weather-loop.yaml')}`;
    const recipe = awaken(['bench', '--config', 'examples/bench/awaken.yaml', '--agent', 'weather', '--model', script, '--steps', '5', '--rounds', '1']);
    expect(recipe).toEqual({ code: EXIT.data, out: '', err: `${documented('docs/bench.md', 'awaken bench: examples/bench/awaken.yaml: ')}\n` });
    const bad = yamlOf('docs/plugins/permission.md').replace('{ tool: Read, behavior: allow }', '{ tool: "Bash(npm *", behavior: allow }');
    expect(awaken(['bench', '--config', './awaken.yaml', '--agent', 'coder', '--model', script, '--steps', '5', '--rounds', '1'], models + bad)).toEqual({
      code: EXIT.data,
      out: '',
      err: `${documented('docs/bench.md', 'awaken bench: ./awaken.yaml: ')}\n`,
    });
  });
});

describe('docs/delegation.md: its YAML, exactly as written, configures the delegation', () => {
  let server: ServeProcess;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-doc-delegation-'));
    writeFileSync(join(dir, 'awaken.yaml'), `server:\n  store: memory\nmodels:\n  main: { provider: demo, model_name: demo }\n${yamlOf('docs/delegation.md')}`);
    server = await startServe(['--config', join(dir, 'awaken.yaml')], { REPORTS_TOKEN: 'reports-token' });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('the orchestrator runs with the delegation settings the doc gives it', async () => {
    const written = (parseYaml(yamlOf('docs/delegation.md')) as { agents: { sections: { delegation: unknown } }[] }).agents[0]?.sections.delegation;
    const agent = (await (await fetch(`${server.url}/v1/config/agents/orchestrator`)).json()) as {
      value: { delegates: string[]; sections: Record<string, unknown> };
    };
    expect(agent.value.delegates).toEqual(['researcher', 'analyst']);
    expect(agent.value.sections).toEqual({ delegation: written });
    expect(written).toEqual({ max_depth: 2, max_fan_out: 3 });
  });
});
