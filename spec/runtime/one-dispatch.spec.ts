import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Whether a value is a promise is asked in one module, src/runtime/maybe-promise.ts; every other
 * module says what to do with a value now or later (`andThen`, `drive`, `eachInOrder`, …). The check
 * reads the syntax, not the text, so comments and strings that mention the question do not count,
 * and a guard spread over lines or wrapped in braces still does.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');
const THE_ONE = 'src/runtime/maybe-promise.ts';
/** What maybe-promise.ts asks: `typeof value.then === 'function'` once, in the private `isPromiseLike`, and a call of it per helper. */
const ASKED_THERE = { typeofThen: 1, calls: 8 };

type Kind = 'isPromiseLike call' | 'isThenable call' | 'instanceof Promise' | "typeof … .then === 'function'" | 'if (x !== undefined) await …';

interface Finding {
  readonly line: number;
  readonly kind: Kind;
}

const isUndefined = (e: ts.Expression): boolean => ts.isIdentifier(e) && e.text === 'undefined';

/** `typeof a.then` or `typeof a?.then` (whatever `a` is, a cast included), under any parentheses. */
function isTypeofThen(e: ts.Expression): boolean {
  let x = e;
  while (ts.isParenthesizedExpression(x)) x = x.expression;
  if (!ts.isTypeOfExpression(x)) return false;
  let target: ts.Expression = x.expression;
  while (ts.isParenthesizedExpression(target)) target = target.expression;
  return ts.isPropertyAccessExpression(target) && target.name.text === 'then';
}

/** `await …;` alone, or as the only statement of a block. */
function isLoneAwait(s: ts.Statement): boolean {
  if (ts.isBlock(s)) return s.statements.length === 1 && isLoneAwait(s.statements[0] as ts.Statement);
  return ts.isExpressionStatement(s) && ts.isAwaitExpression(s.expression);
}

/**
 * Text every form of the question contains (a superset, so that a module that cannot hold one is
 * not parsed): the syntax below decides.
 */
const MAY_ASK = /isPromiseLike|isThenable|instanceof\s+Promise|typeof[^;]*\.then\b|undefined\s*\)\s*\{?\s*await\b|undefined\s*!==/;

/** Every place in `source` that asks whether a value is a promise. */
function askers(source: string, fileName = 'planted.ts'): Finding[] {
  if (!MAY_ASK.test(source)) return [];
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS);
  const found: Finding[] = [];
  const at = (node: ts.Node, kind: Kind): void => {
    found.push({ line: file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1, kind });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression)) {
      if (node.expression.text === 'isPromiseLike') at(node, 'isPromiseLike call');
      if (node.expression.text === 'isThenable') at(node, 'isThenable call');
    }
    if (ts.isBinaryExpression(node)) {
      const op = node.operatorToken.kind;
      if (op === ts.SyntaxKind.InstanceOfKeyword && ts.isIdentifier(node.right) && node.right.text === 'Promise') at(node, 'instanceof Promise');
      const equality =
        op === ts.SyntaxKind.EqualsEqualsEqualsToken || op === ts.SyntaxKind.EqualsEqualsToken || op === ts.SyntaxKind.ExclamationEqualsEqualsToken;
      const isFunctionText = (e: ts.Expression): boolean => ts.isStringLiteralLike(e) && e.text === 'function';
      if (equality && ((isTypeofThen(node.left) && isFunctionText(node.right)) || (isTypeofThen(node.right) && isFunctionText(node.left)))) {
        at(node, "typeof … .then === 'function'");
      }
    }
    if (ts.isIfStatement(node) && node.elseStatement === undefined && isLoneAwait(node.thenStatement)) {
      const c = node.expression;
      if (ts.isBinaryExpression(c) && c.operatorToken.kind === ts.SyntaxKind.ExclamationEqualsEqualsToken && (isUndefined(c.right) || isUndefined(c.left))) {
        at(node, 'if (x !== undefined) await …');
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function tsFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return tsFilesUnder(path);
    return e.isFile() && e.name.endsWith('.ts') ? [path] : [];
  });
}

const count = (findings: readonly Finding[], kind: Kind): number => findings.filter((f) => f.kind === kind).length;

describe('the sync-or-promise question is asked in one place', () => {
  const files = tsFilesUnder(SRC).map((path) => ({ name: relative(ROOT, path).split('\\').join('/'), text: readFileSync(path, 'utf8') }));

  it('src holds the module that asks and a few hundred that do not', () => {
    expect(files.some((f) => f.name === THE_ONE)).toBe(true);
    expect(files.length).toBeGreaterThan(100);
  });

  it('no module but src/runtime/maybe-promise.ts asks: no isPromiseLike or isThenable call, instanceof Promise, typeof x.then test, or `if (x !== undefined) await …`', () => {
    const offenders = files.filter((f) => f.name !== THE_ONE).flatMap((f) => askers(f.text, f.name).map((a) => `${f.name}:${a.line}: ${a.kind}`));
    expect(offenders).toEqual([]);
  });

  it('maybe-promise.ts asks through one private function, once per helper', () => {
    const text = (files.find((f) => f.name === THE_ONE) as { text: string }).text;
    const there = askers(text, THE_ONE);
    expect(count(there, "typeof … .then === 'function'")).toBe(ASKED_THERE.typeofThen);
    expect(count(there, 'isPromiseLike call')).toBeLessThanOrEqual(ASKED_THERE.calls);
    expect(count(there, 'instanceof Promise') + count(there, 'isThenable call') + count(there, 'if (x !== undefined) await …')).toBe(0);
    // Not exported: a module that wants to ask cannot import the question.
    expect(text).toMatch(/^function isPromiseLike</m);
    expect(text).not.toMatch(/export\s+(async\s+)?function\s+(isPromiseLike|isThenable)\b/);
  });

  it('flags each form of the question in planted source, and not a mention of it', () => {
    const planted = [
      'async function a(x: unknown, wait: Promise<void> | undefined) {',
      '  if (isPromiseLike(x)) return;',
      '  const y = isThenable(x) ? await x : x;',
      '  if (x instanceof Promise) await x;',
      "  if (typeof (x as any)?.then === 'function') return;",
      "  if ('function' == typeof (x as { then?: unknown }).then) return;",
      '  if (wait !== undefined) await wait;',
      '  if (undefined !== wait) {',
      '    await wait;',
      '  }',
      '}',
    ].join('\n');
    expect(askers(planted)).toEqual([
      { line: 2, kind: 'isPromiseLike call' },
      { line: 3, kind: 'isThenable call' },
      { line: 4, kind: 'instanceof Promise' },
      { line: 5, kind: "typeof … .then === 'function'" },
      { line: 6, kind: "typeof … .then === 'function'" },
      { line: 7, kind: 'if (x !== undefined) await …' },
      { line: 8, kind: 'if (x !== undefined) await …' },
    ]);
    const mentions = [
      '// if (wait !== undefined) await wait; isPromiseLike(x)',
      "const doc = 'x instanceof Promise';",
      'const t = `typeof x.then === "function"`;',
      'async function b(w?: Promise<void>) {',
      '  if (w === undefined) return;',
      '  await w;',
      '}',
    ].join('\n');
    expect(askers(mentions)).toEqual([]);
  });
});
