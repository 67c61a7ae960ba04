import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as root from '../../src/index.ts';
import * as unstable from 'awaken-ts/unstable';

/**
 * The root entry is a list someone chose, and docs/api.md says what each name on it is for: the
 * runtime exports and the type-only ones (read from src/index.ts's export declarations, which name
 * every export: there is no `export *` to hide one), kept under a ceiling, each with its line in the
 * docs under the heading of its group, and no line left over for a name that went.
 */
const repo = resolve(import.meta.dirname, '../..');
const MAX_ROOT_EXPORTS = 252;

interface RootExport {
  readonly name: string;
  readonly typeOnly: boolean;
  /** The comment above the export declaration's group (`// Tools`). */
  readonly group: string;
}

/** Every export of src/index.ts, and whatever in it is not a named re-export (an `export *`, a declaration). */
function readRoot(): { readonly exports: readonly RootExport[]; readonly unnamed: readonly string[] } {
  const text = readFileSync(join(repo, 'src/index.ts'), 'utf8');
  const file = ts.createSourceFile('src/index.ts', text, ts.ScriptTarget.Latest, true);
  const exports: RootExport[] = [];
  const unnamed: string[] = [];
  let group = '';
  for (const statement of file.statements) {
    const comments = ts.getLeadingCommentRanges(text, statement.getFullStart()) ?? [];
    const last = comments.at(-1);
    if (last !== undefined && last.kind === ts.SyntaxKind.SingleLineCommentTrivia) group = text.slice(last.pos + 2, last.end).trim();
    if (ts.isExportDeclaration(statement) && statement.exportClause !== undefined && ts.isNamedExports(statement.exportClause)) {
      for (const element of statement.exportClause.elements) {
        exports.push({ name: element.name.text, typeOnly: statement.isTypeOnly || element.isTypeOnly, group });
      }
    } else if (
      ts.isExportDeclaration(statement) ||
      ts.isExportAssignment(statement) ||
      (ts.canHaveModifiers(statement) && (ts.getModifiers(statement) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword))
    ) {
      unnamed.push(statement.getText(file).split('\n')[0] as string);
    }
  }
  return { exports, unnamed };
}

interface DocLine {
  readonly name: string;
  readonly typeOnly: boolean;
  /** The `###` heading the line is under. */
  readonly heading: string;
  readonly line: number;
}

/** docs/api.md's lines naming a root export: ``- `name` — what it is for`` (a subpath's line names `awaken-ts/…`). */
function readDocs(): { readonly lines: readonly DocLine[]; readonly subpaths: readonly string[] } {
  const lines: DocLine[] = [];
  const subpaths: string[] = [];
  let heading = '';
  readFileSync(join(repo, 'docs/api.md'), 'utf8')
    .split('\n')
    .forEach((text, i) => {
      const h = /^###? (.+)$/.exec(text);
      if (h !== null) heading = h[1] as string;
      const entry = /^- `([A-Za-z_$][\w$]*)`( \*\(type\)\*)? — \S/.exec(text);
      if (entry !== null) lines.push({ name: entry[1] as string, typeOnly: entry[2] !== undefined, heading, line: i + 1 });
      const subpath = /^- `awaken-ts\/([\w-]+)` — \S/.exec(text);
      if (subpath !== null) subpaths.push(`./${subpath[1] as string}`);
    });
  return { lines, subpaths };
}

const { exports, unnamed } = readRoot();
const docs = readDocs();

describe('the root entry, awaken-ts', () => {
  it('names every export: no `export *`, nothing declared in the entry itself', () => {
    expect(unnamed).toEqual([]);
    const seen = new Set<string>();
    expect(exports.filter((e) => seen.has(e.name) || !seen.add(e.name)).map((e) => e.name)).toEqual([]);
  });

  it('exports at runtime exactly the names its declarations export as values', () => {
    const values = exports
      .filter((e) => !e.typeOnly)
      .map((e) => e.name)
      .sort();
    expect(Object.keys(root).sort()).toEqual(values);
  });

  it(`exports at most ${MAX_ROOT_EXPORTS} names, values and types together`, () => {
    const values = exports.filter((e) => !e.typeOnly).length;
    process.stdout.write(`awaken-ts: ${exports.length} exports (${values} values, ${exports.length - values} types)\n`);
    expect(exports.length).toBeLessThanOrEqual(MAX_ROOT_EXPORTS);
  });

  it('keeps the machinery out: the loop, the tool batch, the phase runtime and snapshot internals are under awaken-ts/unstable', () => {
    const machinery = [
      'RunLoop',
      'ToolBatch',
      'PhaseRuntime',
      'SnapshotDraft',
      'KeyLayout',
      'StateStore',
      'MutationBatch',
      'commitBatch',
      'buildExecutionEnv',
      'resolveAgent',
    ];
    expect(machinery.filter((name) => name in root || exports.some((e) => e.name === name))).toEqual([]);
    expect(machinery.filter((name) => !(name in unstable))).toEqual([]);
  });
});

describe('docs/api.md', () => {
  it('has one line per root export, and none for a name the root does not export', () => {
    const names = new Set(exports.map((e) => e.name));
    const documented = new Set(docs.lines.map((l) => l.name));
    const seen = new Set<string>();
    expect({
      undocumented: exports.filter((e) => !documented.has(e.name)).map((e) => e.name),
      notExported: docs.lines.filter((l) => !names.has(l.name)).map((l) => `docs/api.md:${l.line} ${l.name}`),
      twice: docs.lines.filter((l) => seen.has(l.name) || !seen.add(l.name)).map((l) => `docs/api.md:${l.line} ${l.name}`),
    }).toEqual({ undocumented: [], notExported: [], twice: [] });
  });

  it("lists each name under its group's heading in src/index.ts, marked *(type)* when it exists only for TypeScript", () => {
    const byName = new Map(exports.map((e) => [e.name, e]));
    const misplaced = docs.lines.flatMap((l) => {
      const e = byName.get(l.name);
      if (e === undefined) return [];
      const wrong: string[] = [];
      if (e.group !== l.heading) wrong.push(`docs/api.md:${l.line} ${l.name} is under "${l.heading}", src/index.ts groups it under "${e.group}"`);
      if (e.typeOnly !== l.typeOnly)
        wrong.push(`docs/api.md:${l.line} ${l.name} ${e.typeOnly ? 'is type-only: mark it *(type)*' : 'is a value: it is not *(type)*'}`);
      return wrong;
    });
    expect(misplaced).toEqual([]);
  });

  it("names the package's subpaths, each one an entry of package.json's exports", () => {
    const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
    const entries = Object.keys(pkg.exports).filter((k) => k !== '.' && k !== './package.json');
    expect([...docs.subpaths].sort()).toEqual(entries.sort());
  });
});

describe('awaken-ts/unstable', () => {
  it('holds every root value as the same binding (one library, two entries)', () => {
    expect(Object.keys(root).filter((name) => (unstable as Record<string, unknown>)[name] !== (root as Record<string, unknown>)[name])).toEqual([]);
  });

  it('holds every root type: the compiler finds each type-only root export in src/unstable.ts', () => {
    const config = ts.getParsedCommandLineOfConfigFile(join(repo, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
    if (config === undefined) throw new Error('tsconfig.json could not be read');
    const entry = join(repo, 'src/unstable.ts');
    const program = ts.createProgram([entry], config.options);
    const checker = program.getTypeChecker();
    const module = checker.getSymbolAtLocation(program.getSourceFile(entry) as ts.SourceFile);
    if (module === undefined) throw new Error('src/unstable.ts is not a module');
    const there = new Set(checker.getExportsOfModule(module).map((s) => s.name));
    expect(exports.filter((e) => e.typeOnly && !there.has(e.name)).map((e) => e.name)).toEqual([]);
  }, 60_000);
});
