import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit.ts';
import { repo } from '../support/serve-process.ts';

/**
 * `awaken fuzz` as a real process on the examples of docs/fuzz.md (`examples/fuzz/`): the plugins
 * import `awaken-ts` as a user's would (the built package), and the command prints the shrunk
 * counterexample with the seed and path that replay it.
 */

const bin = join(repo, 'src/cli/awaken.js');
const awaken = (args: string[]) => {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: repo, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
};

describe('awaken fuzz --plugin', () => {
  it("loads a plugin written in TypeScript from a folder outside any project: awaken-ts, zod and fast-check are the CLI's own", () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-fuzz-ts-'));
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
    const plugin = readFileSync(join(repo, 'examples/fuzz/visit-log.mjs'), 'utf8').replace(
      'export default {',
      'export default <{ name: string; register: (r: any) => void }>{',
    );
    writeFileSync(join(dir, 'visit-log.ts'), plugin);
    const r = spawnSync(process.execPath, [bin, 'fuzz', '--plugin', 'visit-log.ts', '--runs', '30'], { cwd: dir, encoding: 'utf8' });
    expect({ code: r.status, out: r.stdout, err: r.stderr }).toEqual({
      code: EXIT.ok,
      err: '',
      out: 'plugin visit_log: passed — hooks in after_tool_execute\nvisit_log.tools: every law holds (commutative, pure, codec, persistence)\n',
    });
  });

  it('passes a well-made plugin: every law of its key holds, and its hooks are deterministic, own their keys and converge', () => {
    const r = awaken(['fuzz', '--plugin', 'examples/fuzz/visit-log.mjs', '--runs', '30']);
    expect(r).toEqual({
      code: EXIT.ok,
      err: '',
      out: 'plugin visit_log: passed — hooks in after_tool_execute\nvisit_log.tools: every law holds (commutative, pure, codec, persistence)\n',
    });
  });

  it('catches a "commutative" list: the counterexample as updates, the seed and the path; the path replays it alone', () => {
    const r = awaken(['fuzz', '--plugin', 'examples/fuzz/broken-history.mjs', '--seed', '42']);
    expect(r.code).toBe(EXIT.failed);
    expect(r.out).toContain(
      'plugin history: FAILED — hooks in after_tool_execute\nhistory.calls: 1 law(s) broken (commutative, pure, codec, persistence)\n  ✗ commutative: parallel batches give the same value in every order and grouping\n      start:      []\n      batch 1:    update(',
    );
    const replay = /replay the first: awaken fuzz --plugin examples\/fuzz\/broken-history\.mjs --seed=42 --path '([^']+)'/.exec(r.out);
    expect(replay?.[1]).toMatch(/^key=history\.calls@commutative@[\d:]+$/);
    const again = awaken(['fuzz', '--plugin', 'examples/fuzz/broken-history.mjs', '--seed', '42', '--path', replay?.[1] ?? '']);
    expect(again.code).toBe(EXIT.failed);
    expect(again.out).toContain('history.calls: 1 law(s) broken (commutative)\n');
    // The same counterexample, line for line.
    const lines = (text: string): string[] => text.split('\n').filter((l) => l.startsWith('      '));
    expect(lines(again.out)).toEqual(lines(r.out));
  });

  it('a negative seed: --seed S and --seed=S are the same run, and the reproduce line it prints runs as printed', () => {
    const seed = '-779101597';
    const spaced = awaken(['fuzz', '--plugin', 'examples/fuzz/broken-history.mjs', '--seed', seed]);
    expect(awaken(['fuzz', '--plugin', 'examples/fuzz/broken-history.mjs', `--seed=${seed}`])).toEqual(spaced);
    expect({ code: spaced.code, err: spaced.err }).toEqual({ code: EXIT.failed, err: '' });
    const printed = /\nreplay the first: awaken (.+)\n$/.exec(spaced.out)?.[1] as string;
    const path = /--path '([^']+)'$/.exec(printed)?.[1] as string;
    expect(printed).toBe(`fuzz --plugin examples/fuzz/broken-history.mjs --seed=${seed} --path '${path}'`);
    // Pasted into a shell as it is: the counterexample alone, line for line.
    const again = spawnSync('bash', ['-c', `"${process.execPath}" "${bin}" ${printed}`], { cwd: repo, encoding: 'utf8' });
    const only = spaced.out.replace('(commutative, pure, codec, persistence)', '(commutative)');
    expect({ code: again.status, err: again.stderr, out: again.stdout }).toEqual({ code: EXIT.failed, err: '', out: only });
  });

  it('--json prints the report', () => {
    const r = awaken(['fuzz', '--plugin', 'examples/fuzz/visit-log.mjs', '--runs', '5', '--json']);
    expect(r.code).toBe(EXIT.ok);
    expect(JSON.parse(r.out)).toMatchObject({
      plugin: 'visit_log',
      phases: ['after_tool_execute'],
      unchecked: [],
      failures: [],
      passed: true,
      keys: [{ key: 'visit_log.tools', passed: true }],
    });
  });

  it('says what is wrong with the input: no --plugin, a file that is not there, a module without a plugin, a bad number', () => {
    expect(awaken(['fuzz'])).toEqual({ code: EXIT.usage, out: '', err: 'awaken fuzz: --plugin FILE is required; see awaken fuzz --help\n' });
    expect(awaken(['fuzz', '--plugin', 'examples/fuzz/none.mjs'])).toEqual({
      code: EXIT.noInput,
      out: '',
      err: 'awaken fuzz: cannot read examples/fuzz/none.mjs: no such file\n',
    });
    const empty = join(mkdtempSync(join(tmpdir(), 'awaken-fuzz-')), 'empty.mjs');
    writeFileSync(empty, 'export const nothing = 1;\n');
    const r = awaken(['fuzz', '--plugin', empty]);
    expect(r.code).toBe(EXIT.data);
    expect(r.err).toContain('exports no plugin');
    expect(awaken(['fuzz', '--plugin', 'examples/fuzz/visit-log.mjs', '--runs', 'many'])).toMatchObject({
      code: EXIT.usage,
      err: "awaken fuzz: --runs must be an integer, not 'many'; see awaken fuzz --help\n",
    });
  });
});
