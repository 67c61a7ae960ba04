import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The benchmarks written in plain JavaScript (`bench/peers/`) are checked by no compiler and run by
 * no spec: a module they import that was moved, or a name the package no longer exports, would
 * show only when someone runs `npm run bench:peers`. What they import is checked here instead.
 */
const root = resolve(import.meta.dirname, '../..');

function scripts(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name === 'node_modules' || e.name === 'results') return [];
    const path = join(dir, e.name);
    return e.isDirectory() ? scripts(path) : /\.m?js$/.test(e.name) ? [path] : [];
  });
}

/**
 * `import { a, b as c } from 'x'`, `import d, { e } from 'x'`, `export { f } from 'x'`,
 * `const { g, h: i } = await import('x')` and `const m = await import('x')`, quoted either way: the
 * specifier and the names taken from it.
 */
function importsOf(text: string): { readonly from: string; readonly names: readonly string[] }[] {
  const found: { from: string; names: string[] }[] = [];
  const names = (list: string | undefined): string[] =>
    (list ?? '')
      .split(',')
      .map((n) => n.trim().split(/\s+as\s+|\s*:\s*/)[0] as string)
      .filter((n) => n !== '');
  const statics = /^(?:import|export)\s+(?:[\w$]+\s*,\s*)?(?:\{([^}]*)\}|\*\s+as\s+[\w$]+|[\w$]+)\s+from\s+['"]([^'"]+)['"]/gm;
  for (const m of text.matchAll(statics)) found.push({ from: m[2] as string, names: names(m[1]) });
  for (const m of text.matchAll(/\b(?:const|let)\s+\{([^}]*)\}\s*=\s*await\s+import\(['"]([^'"]+)['"]\)/g))
    found.push({ from: m[2] as string, names: names(m[1]) });
  for (const m of text.matchAll(/\b(?:const|let)\s+[\w$]+\s*=\s*await\s+import\(['"]([^'"]+)['"]\)/g)) found.push({ from: m[1] as string, names: [] });
  for (const m of text.matchAll(/\(await\s+import\(['"]([^'"]+)['"]\)\)\.([\w$]+)/g)) found.push({ from: m[1] as string, names: [m[2] as string] });
  return found;
}

/** The package's entry points, by the specifier a consumer writes, as its exports map gives their sources. */
const ENTRIES: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries((JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, { 'awaken-source'?: string }> }).exports).flatMap(
    ([path, entry]) => (entry['awaken-source'] === undefined ? [] : [[path === '.' ? 'awaken-ts' : `awaken-ts/${path.slice(2)}`, entry['awaken-source']]]),
  ),
);

/** Whether a module's text exports `name`: a declaration, or a name in an export list. */
const exportsName = (text: string, name: string): boolean =>
  new RegExp(`^export\\s+(?:async\\s+)?(?:const|let|var|function\\*?|class)\\s+${name}\\b`, 'm').test(text) ||
  [...text.matchAll(/^export\s*\{([^}]*)\}/gm)].some((m) =>
    (m[1] as string).split(',').some(
      (n) =>
        n
          .trim()
          .split(/\s+as\s+/)
          .at(-1) === name,
    ),
  );

describe('the plain-JavaScript benchmarks import what is there', () => {
  const files = scripts(join(root, 'bench'));

  it('finds the scripts of bench/peers', () => {
    expect(files.map((f) => relative(root, f)).sort()).toEqual(['bench/peers/run.mjs', 'bench/peers/subjects.mjs']);
  });

  it.each(files.map((f) => [relative(root, f), f] as const))('%s: every module it imports is there, and every name it takes from one', async (_, file) => {
    const imports = importsOf(readFileSync(file, 'utf8'));
    // A script none of whose own imports were read (Node's aside) would pass without a check.
    expect(imports.filter((i) => !i.from.startsWith('node:')).length).toBeGreaterThan(0);
    const problems: string[] = [];
    for (const { from, names } of imports) {
      if (from.startsWith('.')) {
        const target = resolve(dirname(file), from);
        if (!existsSync(target)) problems.push(`${from}: no such file`);
        else for (const name of names) if (!exportsName(readFileSync(target, 'utf8'), name)) problems.push(`${from}: no export named ${name}`);
        continue;
      }
      const entry = ENTRIES[from];
      if (entry === undefined) continue;
      const exported = (await import(join(root, entry))) as Record<string, unknown>;
      for (const name of names) if (!(name in exported)) problems.push(`${from}: no export named ${name}`);
    }
    expect(problems).toEqual([]);
  });

  it('reads the forms of import the scripts may use', () => {
    const text = [
      "import { a, b as c } from './x.mjs';",
      "import * as y from 'y';",
      'import z, { w } from "z";',
      "export { v } from './v.mjs';",
      "  const { d, e: f } = await import('awaken-ts');",
      '  const m = await import("awaken-ts/testing");',
      "  const n = (await import('node:fs')).readFileSync;",
    ].join('\n');
    expect(importsOf(text)).toEqual([
      { from: './x.mjs', names: ['a', 'b'] },
      { from: 'y', names: [] },
      { from: 'z', names: ['w'] },
      { from: './v.mjs', names: ['v'] },
      { from: 'awaken-ts', names: ['d', 'e'] },
      { from: 'awaken-ts/testing', names: [] },
      { from: 'node:fs', names: ['readFileSync'] },
    ]);
  });

  it('knows every entry point of the package, and what a module exports', () => {
    expect(ENTRIES['awaken-ts']).toBe('./src/index.ts');
    expect(ENTRIES['awaken-ts/testing']).toBe('./src/testing/index.ts');
    const text = 'export const SUBJECTS = [];\nexport async function awaken() {}\nexport { x as y, z };';
    expect(['SUBJECTS', 'awaken', 'y', 'z', 'x', 'other'].map((n) => exportsName(text, n))).toEqual([true, true, true, true, false, false]);
  });
});
