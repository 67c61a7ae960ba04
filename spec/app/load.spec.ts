import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { appVersion } from '../../src/app/load.ts';

const repo = join(import.meta.dirname, '../..');
const folders: string[] = [];
afterAll(() => {
  for (const f of folders) rmSync(f, { recursive: true, force: true });
});

function folder(files: Readonly<Record<string, string>>): string {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-load-'));
  folders.push(dir);
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

/** `script` run by a Node process of its own (the loader's hooks are process-wide), from the sources through tsx; its stdout. */
const node = (script: string, cwd: string): string =>
  execFileSync(
    process.execPath,
    ['--expose-gc', '--import', pathToFileURL(join(repo, 'node_modules/tsx/dist/loader.mjs')).href, '--input-type=module', '-e', script],
    { cwd, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } },
  );

const app = (answer: string): string => `import { defineApp, scriptedProvider } from 'awaken-ts';
import { z } from 'zod';
import { greeting } from './lib/greeting.ts';
export const schema = z.object({ a: z.string() });
export default defineApp({
  agents: [{ id: 'a', model: 'm', system_prompt: greeting + ${JSON.stringify(answer)} }],
  models: { m: { provider: 'p', model_name: 'n' } },
  providers: { p: scriptedProvider([{ text: 'x' }]) },
});
`;

describe('loadApp', () => {
  it("reads the app's own files again on every load, shares node_modules and this package, and 100 loads keep under 50 MB", () => {
    const dir = folder({ 'app.ts': app('0'), 'lib/greeting.ts': "export const greeting = 'hello ';\n" });
    const out = node(
      `
import { writeFileSync } from 'node:fs';
import { z } from ${JSON.stringify(pathToFileURL(join(repo, 'node_modules/zod/index.js')).href)};
import { loadApp } from ${JSON.stringify(join(repo, 'src/app/load.ts'))};
const first = await loadApp('app.ts');
writeFileSync('lib/greeting.ts', "export const greeting = 'hi ';\\n");
const second = await loadApp('app.ts');
const prompts = [first, second].map((l) => l.app.agents[0].system_prompt);
globalThis.gc(); globalThis.gc();
const before = process.memoryUsage().rss;
for (let i = 0; i < 100; i++) {
  writeFileSync('app.ts', ${JSON.stringify(app('').replace('+ ""', '+ String(__N__)'))}.replace('__N__', String(i)));
  await loadApp('app.ts');
}
globalThis.gc(); globalThis.gc();
const grown = (process.memoryUsage().rss - before) / 2 ** 20;
const mod = await import('./app.ts?awaken-app=1');
console.log(JSON.stringify({ prompts, sharedZod: mod.schema instanceof z.ZodObject, versions: first.version !== second.version, grown: grown < 50 ? 'under 50 MB' : grown + ' MB' }));
`,
      dir,
    );
    expect(JSON.parse(out)).toEqual({ prompts: ['hello 0', 'hi 0'], sharedZod: true, versions: true, grown: 'under 50 MB' });
  });

  it("the version is a digest of the app's own source files: node_modules and dot folders do not count", () => {
    const dir = folder({ 'app.ts': app('0'), 'lib/greeting.ts': "export const greeting = 'hello ';\n", 'node_modules/x/index.js': '1' });
    const file = join(dir, 'app.ts');
    const first = appVersion(file);
    expect(first).toMatch(/^sha256:[0-9a-f]{12}$/);
    writeFileSync(join(dir, 'node_modules/x/index.js'), '2');
    mkdirSync(join(dir, '.cache'));
    writeFileSync(join(dir, '.cache/y.js'), '3');
    expect(appVersion(file)).toBe(first);
    writeFileSync(join(dir, 'lib/greeting.ts'), "export const greeting = 'hey ';\n");
    expect(appVersion(file)).not.toBe(first);
  });
});
