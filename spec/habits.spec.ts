import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';
import { listSources } from './support/import-graph.ts';

/**
 * Habits the compiler and the linter do not enforce on their own (docs/adr/0054-biome-and-habits.md):
 * a `switch` over a union ends in `default: unreachable(x)` (src/contract/never.ts), so a member
 * added to the union is a compile error where the switch is instead of a value that falls through;
 * and a comment says why the code is as it is, never which issue or task asked for it.
 */

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * A union the compiler can check a switch against: every member a literal, `null` or `undefined`.
 * `typeof x` is left out: its eight answers are the language's and never grow.
 */
function isLiteralUnion(discriminant: ts.Expression, type: ts.Type): boolean {
  if (ts.isTypeOfExpression(discriminant)) return false;
  if (!type.isUnion()) return false;
  const literal = ts.TypeFlags.Literal | ts.TypeFlags.EnumLiteral | ts.TypeFlags.Undefined | ts.TypeFlags.Null;
  return type.types.every((t) => (t.flags & literal) !== 0);
}

/**
 * `unreachable(x)`, `return unreachable(x)`: a call that type-checks only when `x` is `never`, that
 * is of a function whose first parameter is declared `never` (`unreachable` of src/contract/never.ts,
 * or a local one that throws the error its callers expect).
 */
function isGuard(checker: ts.TypeChecker, statement: ts.Statement): boolean {
  const call = ts.isReturnStatement(statement) ? statement.expression : ts.isExpressionStatement(statement) ? statement.expression : undefined;
  if (call === undefined || !ts.isCallExpression(call) || call.arguments.length === 0) return false;
  const first = checker.getResolvedSignature(call)?.getDeclaration()?.parameters[0];
  return first?.type?.kind === ts.SyntaxKind.NeverKeyword;
}

/**
 * `const unknown: never = x;` followed by an answer: the guard of a default that must still answer
 * a value from outside the types (plain JavaScript, stored data) instead of throwing.
 */
function isNeverBinding(statement: ts.Statement | undefined, rest: number): boolean {
  if (statement === undefined || rest === 0 || !ts.isVariableStatement(statement)) return false;
  const [decl, ...more] = statement.declarationList.declarations;
  return decl !== undefined && more.length === 0 && decl.type?.kind === ts.SyntaxKind.NeverKeyword && decl.initializer !== undefined;
}

/**
 * Whether the switch's last clause is a `default:` that is the guard: nothing but `unreachable(x)`,
 * or a `never` binding and the answer for a value the types did not foresee.
 */
function endsInGuard(checker: ts.TypeChecker, node: ts.SwitchStatement): boolean {
  const last = node.caseBlock.clauses.at(-1);
  if (last === undefined || !ts.isDefaultClause(last)) return false;
  const body = last.statements.length === 1 && ts.isBlock(last.statements[0] as ts.Statement) ? (last.statements[0] as ts.Block).statements : last.statements;
  return (body.length === 1 && isGuard(checker, body[0] as ts.Statement)) || isNeverBinding(body[0], body.length - 1);
}

/** `file:line` of every switch over a literal union in `files` that does not end in the guard. */
function unguardedSwitches(program: ts.Program, files: readonly string[], base: string): string[] {
  const checker = program.getTypeChecker();
  const out: string[] = [];
  for (const file of files) {
    const source = program.getSourceFile(file);
    if (source === undefined) throw new Error(`not in the program: ${file}`);
    const visit = (node: ts.Node): void => {
      if (ts.isSwitchStatement(node) && isLiteralUnion(node.expression, checker.getTypeAtLocation(node.expression)) && !endsInGuard(checker, node)) {
        const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
        out.push(`${relative(base, file)}:${line + 1}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return out;
}

/** What names an issue or a task instead of a reason: `issue 12`, `(issue: …)`, `#123`, `task 4`, `finding 1`. */
const TRACKER_REFERENCE = [/\bissues?\s*(?:#\s*)?\d+/i, /\bissue\s*:/i, /(?:^|[\s([{,;])#\d+\b/, /\btasks?\s+#?\d+\b/i, /\bfindings?\s+#?\d+\b/i];

/** Every comment of a source text, found by the parser (so no `//` in a string or regex counts). */
function commentsOf(source: ts.SourceFile): { readonly text: string; readonly pos: number }[] {
  const text = source.getFullText();
  const seen = new Map<number, string>();
  const collect = (ranges: readonly ts.CommentRange[] | undefined): void => {
    for (const r of ranges ?? []) seen.set(r.pos, text.slice(r.pos, r.end));
  };
  const visit = (node: ts.Node): void => {
    collect(ts.getLeadingCommentRanges(text, node.pos));
    collect(ts.getTrailingCommentRanges(text, node.end));
    ts.forEachChild(node, visit);
  };
  visit(source);
  return [...seen].map(([pos, t]) => ({ text: t, pos }));
}

/** `file:line: comment line` of every comment line in `sources` that names an issue or a task. */
function trackerReferences(sources: readonly ts.SourceFile[], base: string): string[] {
  const out: string[] = [];
  for (const source of sources) {
    for (const comment of commentsOf(source)) {
      const first = source.getLineAndCharacterOfPosition(comment.pos).line;
      comment.text.split('\n').forEach((line, i) => {
        if (TRACKER_REFERENCE.some((re) => re.test(line))) out.push(`${relative(base, source.fileName)}:${first + i + 1}: ${line.trim()}`);
      });
    }
  }
  return out;
}

/** A program over in-memory files, with the project's strictness. */
function programOf(files: Readonly<Record<string, string>>): ts.Program {
  const options: ts.CompilerOptions = { strict: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, noEmit: true, types: [] };
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version) => (name in files ? ts.createSourceFile(name, files[name] as string, version) : read(name, version));
  host.fileExists = (name) => name in files || ts.sys.fileExists(name);
  host.readFile = (name) => files[name] ?? ts.sys.readFile(name);
  return ts.createProgram(Object.keys(files), options, host);
}

const NEVER = 'function unreachable(value: never): never { throw new Error(String(value)); }\n';
const EVENT = "type Event = { type: 'start' } | { type: 'text'; text: string } | { type: 'end' };\n";

function offendersIn(body: string): string[] {
  return unguardedSwitches(programOf({ '/m.ts': NEVER + EVENT + body }), ['/m.ts'], '/');
}

describe('the switch guard check', () => {
  it('flags a switch over a tag with no default', () => {
    expect(
      offendersIn(
        "export function f(e: Event): string {\n  switch (e.type) {\n    case 'start': return 's';\n    case 'text': return e.text;\n    case 'end': return 'e';\n  }\n}\n",
      ),
    ).toEqual(['m.ts:4']);
  });

  it('flags a default that handles members instead of guarding', () => {
    expect(
      offendersIn("export function f(e: Event): string {\n  switch (e.type) {\n    case 'text': return e.text;\n    default: return '';\n  }\n}\n"),
    ).toEqual(['m.ts:4']);
  });

  it('flags a default that calls a function which does not take `never`', () => {
    const loose =
      "function fail(value: unknown): never { throw new Error(String(value)); }\nexport function f(e: Event): string {\n  switch (e.type) {\n    case 'start': return 's';\n    case 'text': return e.text;\n    case 'end': return 'e';\n    default: return fail(e);\n  }\n}\n";
    expect(offendersIn(loose)).toEqual(['m.ts:5']);
  });

  it('flags a default that is not last, and a default that guards after other work', () => {
    const notLast =
      "export function f(e: Event): string {\n  switch (e.type) {\n    default: return unreachable(e);\n    case 'start': return 's';\n    case 'text': return e.text;\n    case 'end': return 'e';\n  }\n}\n";
    const more =
      "export function g(k: 'a' | 'b'): number {\n  switch (k) {\n    case 'a': return 1;\n    case 'b': return 2;\n    default: void 0; return unreachable(k);\n  }\n}\n";
    expect(offendersIn(notLast + more)).toEqual(['m.ts:4', 'm.ts:12']);
  });

  it('accepts `return unreachable(x)`, a bare `unreachable(x);`, a braced default and a local guard taking `never`', () => {
    const returned =
      "export function f(e: Event): string {\n  switch (e.type) {\n    case 'start': return 's';\n    case 'text': return e.text;\n    case 'end': return 'e';\n    default: return unreachable(e);\n  }\n}\n";
    const bare =
      "export function g(k: 'a' | 'b' | undefined): void {\n  switch (k) {\n    case 'a': case 'b': case undefined: break;\n    default: unreachable(k);\n  }\n}\n";
    const braced =
      'export function h(n: 1 | 2): void {\n  switch (n) {\n    case 1: break;\n    case 2: break;\n    default: {\n      unreachable(n);\n    }\n  }\n}\n';
    const local =
      "function unknownEvent(e: never): never { throw new TypeError(String(e)); }\nexport function l(e: Event): string {\n  switch (e.type) {\n    case 'start': case 'end': return e.type;\n    case 'text': return e.text;\n    default: return unknownEvent(e);\n  }\n}\n";
    expect(offendersIn(returned + bare + braced + local)).toEqual([]);
  });

  it('accepts a default that binds the value as `never` and then answers it, and flags a binding that answers nothing', () => {
    const answered =
      "export function f(e: Event): string {\n  switch (e.type) {\n    case 'start': return 's';\n    case 'text': return e.text;\n    case 'end': return 'e';\n    default: {\n      const unknown: never = e;\n      return JSON.stringify(unknown);\n    }\n  }\n}\n";
    const bare =
      "export function g(e: Event): void {\n  switch (e.type) {\n    case 'start': case 'text': case 'end': break;\n    default: { const unknown: never = e; }\n  }\n}\n";
    expect(offendersIn(answered + bare)).toEqual(['m.ts:15']);
  });

  it('leaves alone a switch over a type that is not a literal union (string, number, `true`, `typeof`)', () => {
    const open =
      "export function f(s: string, n: number, x: Event, u: unknown): number {\n  switch (s) { case 'a': return 1; }\n  switch (n) { case 1: return 2; default: return 3; }\n  switch (true) { case x.type === 'end': return 4; }\n  switch (typeof u) { case 'string': return 5; }\n  return 0;\n}\n";
    expect(offendersIn(open)).toEqual([]);
  });
});

describe('the tracker-reference check', () => {
  const sourceOf = (text: string): ts.SourceFile => ts.createSourceFile('/c.ts', text, ts.ScriptTarget.ES2022, true);

  it('flags a comment that names an issue, a ticket, a task or a finding', () => {
    const text = [
      '// fixed for issue 12',
      'const a = 1; // see #123',
      '/**',
      ' * The lease (issue: the server under faults)',
      ' * as task 4 asked, finding 2',
      ' */',
      'export const b = a;',
      '',
    ].join('\n');
    expect(trackerReferences([sourceOf(text)], '/').map((r) => r.split(':').slice(0, 2).join(':'))).toEqual(['c.ts:1', 'c.ts:2', 'c.ts:4', 'c.ts:5']);
  });

  it('accepts comments that only say why, and `#` or `issue` outside comments', () => {
    const text = [
      '// A task holds its messages; the issues of a parse are joined.',
      "const colour = '#123'; const issue = 1;",
      '/** Private fields (`#loop`) and a `task: string` field. */',
      'export const c = [colour, issue];',
      '',
    ].join('\n');
    expect(trackerReferences([sourceOf(text)], '/')).toEqual([]);
  });
});

const lineCount = (text: string): number => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

/**
 * The files of `src` longer than `limit` lines that do not say why at their top: a leading comment
 * naming the "500 lines" it is over. A room that long is hard to live in, so its size needs a reason.
 */
function longRoomsWithoutReason(sources: readonly { readonly path: string; readonly text: string }[], limit = 500): string[] {
  return sources
    .filter(({ text }) => lineCount(text) > limit)
    .filter(({ text }) => !/^\/\/[^\n]*500 lines/.test(text) && !/^\/\*\*?[\s\S]*?500 lines[\s\S]*?\*\//.test(text.slice(0, text.indexOf('*/') + 2)))
    .map(({ path }) => path);
}

describe('a long room says why', () => {
  const lines = (n: number): string => 'x;\n'.repeat(n);
  it('flags a file over the limit with no reason at its top, and accepts one that has it or is short enough', () => {
    const sources = [
      { path: 'long.ts', text: lines(501) },
      { path: 'exact.ts', text: lines(500) },
      { path: 'line.ts', text: `// Over 500 lines: one switch reads in one place.\n${lines(600)}` },
      { path: 'block.ts', text: `/**\n * Over 500 lines: the interpreter.\n */\n${lines(600)}` },
      { path: 'later.ts', text: `import x from 'y';\n// Over 500 lines: too late to say.\n${lines(600)}` },
    ];
    expect(longRoomsWithoutReason(sources)).toEqual(['long.ts', 'later.ts']);
  });
});

describe('src/ keeps the habits', () => {
  const files = listSources(join(repo, 'src')).filter((f) => f.endsWith('.ts'));
  let program: ts.Program;

  beforeAll(() => {
    const config = ts.getParsedCommandLineOfConfigFile(join(repo, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
    if (config === undefined) throw new Error('tsconfig.json could not be read');
    program = ts.createProgram(files, config.options);
  }, 120_000);

  it('every switch over a union ends in `default: unreachable(x)` (listed as file:line)', () => {
    expect(unguardedSwitches(program, files, repo)).toEqual([]);
  }, 120_000);

  it('a file over 500 lines says why at its top; the run loop and the agent runtime are not over', () => {
    const sources = files.map((f) => ({ path: relative(repo, f), text: ts.sys.readFile(f) ?? '' }));
    expect(longRoomsWithoutReason(sources)).toEqual([]);
    const loop = sources.filter((s) => /runtime\/(run-loop|agent-runtime)\.ts$/.test(s.path));
    expect(loop.map((s) => [s.path, lineCount(s.text) <= 500])).toEqual([
      ['src/runtime/agent-runtime.ts', true],
      ['src/runtime/run-loop.ts', true],
    ]);
  });

  it('no comment names an issue or a task', () => {
    expect(
      trackerReferences(
        files.map((f) => program.getSourceFile(f) as ts.SourceFile),
        repo,
      ),
    ).toEqual([]);
  });
});
