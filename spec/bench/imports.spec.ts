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

/** `import { a, b as c } from 'x'` and `const { a, b } = await import('x')`: the specifier and the names taken from it. */
function importsOf(text: string): { readonly from: string; readonly names: readonly string[] }[] {
  const found: { from: string; names: string[] }[] = [];
  const names = (list: string): string[] =>
    list
      .split(',')
      .map((n) => n.trim().split(/\s+as\s+|\s*:\s*/)[0] as string)
      .filter((n) => n !== '');
  for (const m of text.matchAll(/^import\s+\{([^}]*)\}\s+from\s+'([^']+)'/gm)) found.push({ from: m[2] as string, names: names(m[1] as string) });
  for (const m of text.matchAll(/^import\s+(?:\*\s+as\s+)?[\w$]+\s+from\s+'([^']+)'/gm)) found.push({ from: m[1] as string, names: [] });
  for (const m of text.matchAll(/\b(?:const|let)\s+\{([^}]*)\}\s*=\s*await\s+import\('([^']+)'\)/g))
    found.push({ from: m[2] as string, names: names(m[1] as string) });
  return found;
}

/** The package's own entry points, by the specifier a consumer writes, as the sources export them. */
const ENTRIES: Readonly<Record<string, string>> = {
  'awaken-ts': 'src/index.ts',
  'awaken-ts/testing': 'src/testing/index.ts',
  'awaken-ts/server': 'src/server/index.ts',
  'awaken-ts/stores': 'src/stores/index.ts',
};

describe('the plain-JavaScript benchmarks import what is there', () => {
  const files = scripts(join(root, 'bench'));

  it('finds the scripts of bench/peers', () => {
    expect(files.map((f) => relative(root, f)).sort()).toEqual(['bench/peers/run.mjs', 'bench/peers/subjects.mjs']);
  });

  it.each(files.map((f) => [relative(root, f), f] as const))(
    '%s: every relative module exists, every name taken from the package is exported',
    async (_, file) => {
      const problems: string[] = [];
      for (const { from, names } of importsOf(readFileSync(file, 'utf8'))) {
        if (from.startsWith('.')) {
          if (!existsSync(resolve(dirname(file), from))) problems.push(`${from}: no such file`);
          continue;
        }
        const entry = ENTRIES[from];
        if (entry === undefined) continue;
        const exported = (await import(join(root, entry))) as Record<string, unknown>;
        for (const name of names) if (!(name in exported)) problems.push(`${from}: no export named ${name}`);
      }
      expect(problems).toEqual([]);
    },
  );

  it('reads the forms of import the scripts use', () => {
    expect(
      importsOf(["import { a, b as c } from './x.mjs';", "import * as y from 'y';", "  const { d, e: f } = await import('awaken-ts');"].join('\n')),
    ).toEqual([
      { from: './x.mjs', names: ['a', 'b'] },
      { from: 'y', names: [] },
      { from: 'awaken-ts', names: ['d', 'e'] },
    ]);
  });
});
