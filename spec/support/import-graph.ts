import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';

export interface ImportEdge {
  readonly from: string;
  readonly to: string;
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

export function listSources(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.(ts|js|mjs)$/.test(name)) out.push(path);
    }
  };
  walk(root);
  return out.sort();
}

/** Every import specifier of a source text (static, re-export and dynamic). */
export function importsOf(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT)) out.push((m[1] ?? m[2]) as string);
  return out;
}

/** Edges from each file (relative to `root`, e.g. `src/core/x.ts`) to a relative target or a package name. */
export function importGraph(repo: string, dir: string): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const file of listSources(join(repo, dir))) {
    const from = relative(repo, file);
    for (const spec of importsOf(readFileSync(file, 'utf8'))) {
      const to = spec.startsWith('.') ? relative(repo, resolve(dirname(file), spec)) : spec;
      edges.push({ from, to });
    }
  }
  return edges;
}
