import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit.ts';
import { cli } from '../support/cli.ts';
import { repo } from '../support/serve-process.ts';

/**
 * `awaken fuzz --app FILE --plugin NAME`: the app's plugin of that name fuzzed, with the `fuzz`
 * export of the app's module (the updates its keys' laws are checked with) as `--plugin FILE` reads
 * it; a failure's reproduce line names the app and the plugin, and runs as printed.
 */
const APP = 'spec/cli/fixtures/apps/helper.ts';
const BROKEN = 'spec/cli/fixtures/apps/broken-history.ts';
const PASSED = 'plugin counter: passed — hooks in after_tool_execute\ncounter.calls: every law holds (commutative, pure, codec, persistence)\n';
const folders: string[] = [];
afterAll(() => {
  for (const f of folders) rmSync(f, { recursive: true, force: true });
});

describe('awaken fuzz --app', () => {
  it("fuzzes the app's plugin, checking its key's laws with the module's fuzz export", async () => {
    expect(await cli('fuzz', '--app', APP, '--plugin', 'counter', '--runs', '20')).toEqual({ code: EXIT.ok, err: '', out: PASSED });
  });

  it('a broken plugin of an app: the counterexample, and a reproduce line naming the app and the plugin that replays it alone', async () => {
    const r = await cli('fuzz', '--app', BROKEN, '--plugin', 'history', '--seed', '42');
    expect(r.code).toBe(EXIT.failed);
    expect(r.out).toContain(
      'plugin history: FAILED — hooks in after_tool_execute\nhistory.calls: 1 law(s) broken (commutative, pure, codec, persistence)\n  ✗ commutative: parallel batches give the same value in every order and grouping\n',
    );
    const printed = /\nreplay the first: awaken (.+)\n$/.exec(r.out)?.[1] as string;
    const path = /--path '([^']+)'$/.exec(printed)?.[1] as string;
    expect(printed).toBe(`fuzz --app ${BROKEN} --plugin history --seed=42 --path '${path}'`);
    const again = await cli('fuzz', '--app', BROKEN, '--plugin', 'history', '--seed=42', '--path', path);
    expect(again).toEqual({ code: EXIT.failed, err: '', out: r.out.replace('(commutative, pure, codec, persistence)', '(commutative)') });
  });

  it('a plugin the app does not have, no --plugin: one line each; a wrong app 65, a missing one 66; --plugin FILE alone still reads a plugin module', async () => {
    expect(await cli('fuzz', '--app', APP, '--plugin', 'tally')).toEqual({
      code: EXIT.usage,
      out: '',
      err: `awaken fuzz: no plugin 'tally' in ${APP} (its plugins: counter)\n`,
    });
    expect(await cli('fuzz', '--app', APP)).toEqual({
      code: EXIT.usage,
      out: '',
      err: "awaken fuzz: --plugin NAME is required (the app's plugin to fuzz); see awaken fuzz --help\n",
    });
    expect(await cli('fuzz', '--app', 'spec/cli/fixtures/apps/throws.ts', '--plugin', 'x')).toEqual({
      code: EXIT.data,
      out: '',
      err: 'awaken fuzz: spec/cli/fixtures/apps/throws.ts:5: cannot load: AWAKEN_SPEC_UNSET_KEY is not set\n',
    });
    expect(await cli('fuzz', '--app', 'gone.ts', '--plugin', 'x')).toEqual({
      code: EXIT.noInput,
      out: '',
      err: 'awaken fuzz: cannot read gone.ts: no such file\n',
    });
    expect(await cli('fuzz', '--plugin', 'examples/fuzz/visit-log.mjs', '--runs', '5')).toEqual({
      code: EXIT.ok,
      err: '',
      out: 'plugin visit_log: passed — hooks in after_tool_execute\nvisit_log.tools: every law holds (commutative, pure, codec, persistence)\n',
    });
  });

  it('as a process: a .ts app in a folder outside the repository, whose fuzz export imports fast-check it does not have', () => {
    const dir = mkdtempSync(join(tmpdir(), 'awaken-app-fuzz-'));
    folders.push(dir);
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    copyFileSync(join(repo, APP), join(dir, 'app.ts'));
    const r = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), 'fuzz', '--app', 'app.ts', '--plugin', 'counter', '--runs', '20'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect({ code: r.status, err: r.stderr, out: r.stdout }).toEqual({ code: EXIT.ok, err: '', out: PASSED });
  });
});
