import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../../src/contract/json.ts';
import {
  compareSpecificity,
  compilePattern,
  describeParseError,
  formatPattern,
  parsePattern,
  patternMatches,
  resolvePath,
  toolIdMatch,
  toolIdPatternError,
  valueToString,
  type ArgMatcher,
  type FieldCondition,
  type MatchOp,
  type PathSegment,
  type Specificity,
  type ToolCallPattern,
} from '../../../src/core/pattern/index.ts';

const repo = resolve(import.meta.dirname, '../../..');
const parse = (text: string): ToolCallPattern => {
  const r = parsePattern(text);
  if (!r.ok) throw new Error(describeParseError(r.error));
  return r.value;
};
const parseError = (text: string) => {
  const r = parsePattern(text);
  if (r.ok) throw new Error(`parsed: ${text}`);
  return r.error;
};
const matches = (pattern: string, id: string, args: JsonValue = {}): boolean => patternMatches(parse(pattern), id, args) !== undefined;
const f = (name: string): PathSegment => ({ kind: 'field', name });
const cond = (path: PathSegment[], op: MatchOp, value: string): FieldCondition => ({ path, op, value });

describe('parsePattern: the grammar of core-spec §8.1 (vectors of awaken-tool-pattern parser.rs)', () => {
  it.each<[string, ToolCallPattern]>([
    ['Bash', { tool: { kind: 'exact', name: 'Bash' }, args: { kind: 'any' } }],
    ['mcp__github__*', { tool: { kind: 'glob', pattern: 'mcp__github__*' }, args: { kind: 'any' } }],
    ['Bas?', { tool: { kind: 'glob', pattern: 'Bas?' }, args: { kind: 'any' } }],
    ['Bas[hH]', { tool: { kind: 'glob', pattern: 'Bas[hH]' }, args: { kind: 'any' } }],
    ['Bash(npm *)', { tool: { kind: 'exact', name: 'Bash' }, args: { kind: 'primary', value: 'npm *' } }],
    ['Bash(*)', { tool: { kind: 'exact', name: 'Bash' }, args: { kind: 'any' } }],
    ['  Bash ( * )  ', { tool: { kind: 'exact', name: 'Bash' }, args: { kind: 'any' } }],
    ['/mcp__(github|gitlab)__.*/', { tool: { kind: 'regex', source: 'mcp__(github|gitlab)__.*' }, args: { kind: 'any' } }],
    ['/foo\\/bar/', { tool: { kind: 'regex', source: 'foo\\/bar' }, args: { kind: 'any' } }],
    ['mcp:weather/forecast', { tool: { kind: 'exact', name: 'mcp:weather/forecast' }, args: { kind: 'any' } }],
    [
      'Edit(file_path ~ "src/**/*.rs")',
      { tool: { kind: 'exact', name: 'Edit' }, args: { kind: 'fields', conditions: [cond([f('file_path')], 'glob', 'src/**/*.rs')] } },
    ],
    ['Bash(command = "ls")', { tool: { kind: 'exact', name: 'Bash' }, args: { kind: 'fields', conditions: [cond([f('command')], 'exact', 'ls')] } }],
    ['Bash(command =~ "(?i)rm")', { tool: { kind: 'exact', name: 'Bash' }, args: { kind: 'fields', conditions: [cond([f('command')], 'regex', '(?i)rm')] } }],
    ['T(f !~ "pat")', { tool: { kind: 'exact', name: 'T' }, args: { kind: 'fields', conditions: [cond([f('f')], 'not_glob', 'pat')] } }],
    ['T(f != "val")', { tool: { kind: 'exact', name: 'T' }, args: { kind: 'fields', conditions: [cond([f('f')], 'not_exact', 'val')] } }],
    ['T(f !=~ "re")', { tool: { kind: 'exact', name: 'T' }, args: { kind: 'fields', conditions: [cond([f('f')], 'not_regex', 're')] } }],
    [
      'Tool(f1 ~ "a", f2 = "b")',
      { tool: { kind: 'exact', name: 'Tool' }, args: { kind: 'fields', conditions: [cond([f('f1')], 'glob', 'a'), cond([f('f2')], 'exact', 'b')] } },
    ],
    [
      'Tool(a.b[*].c ~ "pat")',
      { tool: { kind: 'exact', name: 'Tool' }, args: { kind: 'fields', conditions: [cond([f('a'), f('b'), { kind: 'any_index' }, f('c')], 'glob', 'pat')] } },
    ],
    [
      'Tool(items[0] = "val")',
      { tool: { kind: 'exact', name: 'Tool' }, args: { kind: 'fields', conditions: [cond([f('items'), { kind: 'index', index: 0 }], 'exact', 'val')] } },
    ],
    [
      'Tool(*.id = "val")',
      { tool: { kind: 'exact', name: 'Tool' }, args: { kind: 'fields', conditions: [cond([{ kind: 'wildcard' }, f('id')], 'exact', 'val')] } },
    ],
    ['T(f = "say \\"hello\\"")', { tool: { kind: 'exact', name: 'T' }, args: { kind: 'fields', conditions: [cond([f('f')], 'exact', 'say "hello"')] } }],
    ['T(f = "path\\\\file")', { tool: { kind: 'exact', name: 'T' }, args: { kind: 'fields', conditions: [cond([f('f')], 'exact', 'path\\file')] } }],
    ['T(f = "hello\\nworld")', { tool: { kind: 'exact', name: 'T' }, args: { kind: 'fields', conditions: [cond([f('f')], 'exact', 'hello\\nworld')] } }],
    ['Bash(echo (a) b)', { tool: { kind: 'exact', name: 'Bash' }, args: { kind: 'primary', value: 'echo (a) b' } }],
  ])('%s', (text, expected) => {
    expect(parse(text)).toEqual(expected);
  });

  it.each<[string, string, number]>([
    ['', 'empty tool name', 0],
    ['   ', 'empty tool name', 3],
    ['Bash(npm *', "expected ')', found end of input", 10],
    ['//', 'empty regex pattern', 1],
    ['Bash extra', "unexpected trailing: 'extra'", 5],
    ['T(f = "unterminated)', 'unterminated string literal', 20],
    ['T(f = "end\\', 'unterminated escape sequence', 11],
    ['T(f = noquote)', "expected '\"' to start value", 6],
    ['T(a..b = "x")', 'expected identifier', 4],
    ['T(a[x] = "x")', "invalid index: ''", 4],
    ['T(a[1 x] = "x")', "expected ']', found 'x'", 6],
    ['Bash()', 'empty primary pattern', 5],
    ['  Bash extra', "unexpected trailing: 'extra'", 7],
  ])('%j is refused: %s at %i', (text, message, position) => {
    expect(parseError(text)).toEqual({ message, position });
    expect(describeParseError(parseError(text))).toBe(`parse error at ${position}: ${message}`);
  });

  it('a regex that does not compile is a parse error, of the tool or of a condition (0.6 accepts a bad condition regex and never matches it)', () => {
    expect(parseError('/[invalid/').message).toMatch(/^invalid regex: /);
    expect(parseError('/[invalid/').position).toBe(1);
    expect(parseError('T(f =~ "[bad")')).toMatchObject({ message: expect.stringMatching(/^invalid regex: /), position: 8 });
    expect(parseError('T(f !=~ "(")').message).toMatch(/^invalid regex: /);
  });

  it('single-quoted values are refused, as in 0.6 (the book writes them; they never parsed)', () => {
    expect(parseError("Bash(command ~ 'rm *')").message).toBe("expected '\"' to start value");
  });

  it('identifiers with - and a lone * segment are field conditions, and `(* x)` is a primary (0.6 reads the first two as a primary and refuses the third)', () => {
    expect(parse('T(file-path ~ "x")').args).toEqual({ kind: 'fields', conditions: [cond([f('file-path')], 'glob', 'x')] });
    expect(parse('T(* = "x")').args).toEqual({ kind: 'fields', conditions: [cond([{ kind: 'wildcard' }], 'exact', 'x')] });
    expect(parse('T(a* = b)').args).toEqual({ kind: 'primary', value: 'a* = b' });
    expect(parse('Bash(* x)').args).toEqual({ kind: 'primary', value: '* x' });
    expect(parse('Bash(npm *)').args).toEqual({ kind: 'primary', value: 'npm *' });
  });
});

describe('formatPattern (Display of types.rs)', () => {
  it.each([
    ['Bash', 'Bash'],
    ['mcp__*', 'mcp__*'],
    ['/foo|bar/', '/foo|bar/'],
    ['Bash(npm *)', 'Bash(npm *)'],
    ['Bash(*)', 'Bash'],
    ['Edit(file_path~"src/**")', 'Edit(file_path ~ "src/**")'],
    ['T(items[0].name="foo")', 'T(items[0].name = "foo")'],
    ['T(arr[*].val =~ ".*test.*")', 'T(arr[*].val =~ ".*test.*")'],
    ['T(*.id != "secret")', 'T(*.id != "secret")'],
    ['T(cmd !~ "rm *")', 'T(cmd !~ "rm *")'],
    ['T(cmd !=~ "^evil")', 'T(cmd !=~ "^evil")'],
    ['T(f1 ~ "a*", f2 = "b")', 'T(f1 ~ "a*", f2 = "b")'],
    ['T(f = "say \\"hi\\" \\\\ \\n")', 'T(f = "say \\"hi\\" \\\\ \\\\n")'],
  ])('%s prints as %s', (text, printed) => {
    expect(formatPattern(parse(text))).toBe(printed);
  });
});

describe('matching (vectors of awaken-tool-pattern matcher.rs)', () => {
  it('tool names: exact, glob, regex (unanchored)', () => {
    expect(matches('Bash', 'Bash')).toBe(true);
    expect(matches('Bash', 'Read')).toBe(false);
    for (const id of ['mcp__github__create_issue', 'mcp__github__list_repos']) expect(matches('mcp__github__*', id)).toBe(true);
    expect(matches('mcp__github__*', 'mcp__slack__post')).toBe(false);
    expect(matches('/mcp__(github|gitlab)__.*/', 'mcp__gitlab__merge')).toBe(true);
    expect(matches('/mcp__(github|gitlab)__.*/', 'mcp__slack__post')).toBe(false);
    expect(matches('/git/', 'mcp__github__x')).toBe(true);
  });

  it('the primary argument: the single value, else all the arguments as canonical JSON', () => {
    expect(matches('Bash(npm *)', 'Bash', { command: 'npm install' })).toBe(true);
    expect(matches('Bash(npm *)', 'Bash', { command: 'git status' })).toBe(false);
    expect(matches('Bash(*npm*)', 'Bash', { a: 'npm', b: 'x' })).toBe(true);
    expect(matches('Bash(*cargo*)', 'Bash', { a: 'npm', b: 'x' })).toBe(false);
    expect(matches('Tool(*hello*)', 'Tool', 'hello world')).toBe(true);
    expect(matches('Tool(*a*b*)', 'Tool', { a: 1, b: 2 })).toBe(true);
    expect(matches('Tool(\\{"a":1,"b":2\\})', 'Tool', { b: 2, a: 1 })).toBe(true);
  });

  it('field conditions: each operator, missing fields false for every polarity, all conditions AND', () => {
    expect(matches('Edit(file_path ~ "src/**/*.rs")', 'Edit', { file_path: 'src/main.rs' })).toBe(true);
    expect(matches('Edit(file_path ~ "src/**/*.rs")', 'Edit', { file_path: 'src/sub/lib.rs' })).toBe(true);
    expect(matches('Edit(file_path ~ "src/**/*.rs")', 'Edit', { file_path: 'tests/test.rs' })).toBe(false);
    expect(matches('Bash(command = "ls")', 'Bash', { command: 'ls' })).toBe(true);
    expect(matches('Bash(command = "ls")', 'Bash', { command: 'ls -la' })).toBe(false);
    for (const c of ['eval foo', 'EXEC bar']) expect(matches('Bash(command =~ "(?i)eval|exec")', 'Bash', { command: c })).toBe(true);
    expect(matches('Bash(command =~ "(?i)eval|exec")', 'Bash', { command: 'npm install' })).toBe(false);
    expect(matches('Bash(command !~ "rm *")', 'Bash', { command: 'rm -rf /' })).toBe(false);
    expect(matches('Bash(command !~ "rm *")', 'Bash', { command: 'ls' })).toBe(true);
    expect(matches('Bash(command != "rm")', 'Bash', { command: 'ls' })).toBe(true);
    expect(matches('Bash(command != "rm")', 'Bash', { command: 'rm' })).toBe(false);
    expect(matches('Bash(command !=~ "^rm")', 'Bash', { command: 'ls' })).toBe(true);
    expect(matches('Bash(command !=~ "^rm")', 'Bash', { command: 'rm -rf' })).toBe(false);
    expect(matches('Bash(command ~ "npm *")', 'Bash', {})).toBe(false);
    expect(matches('Bash(command !~ "rm *")', 'Bash', {})).toBe(false);
    expect(matches('Tool(a = "1", b = "2")', 'Tool', { a: '1', b: '2' })).toBe(true);
    expect(matches('Tool(a = "1", b = "2")', 'Tool', { a: '1', b: '3' })).toBe(false);
    expect(matches('Tool(a = "1", b = "2")', 'Tool', { a: '1' })).toBe(false);
  });

  it('paths: nested, any index, a given index, a wildcard (existential)', () => {
    expect(matches('Tool(config.host = "localhost")', 'Tool', { config: { host: 'localhost' } })).toBe(true);
    expect(matches('Tool(config.host = "localhost")', 'Tool', { config: { host: 'prod' } })).toBe(false);
    expect(matches('Tool(items[*].name = "secret")', 'Tool', { items: [{ name: 'a' }, { name: 'secret' }] })).toBe(true);
    expect(matches('Tool(items[*].name = "secret")', 'Tool', { items: [{ name: 'a' }, { name: 'b' }] })).toBe(false);
    expect(resolvePath({ items: ['a', 'b', 'c'] }, [f('items'), { kind: 'index', index: 1 }])).toEqual(['b']);
    expect(resolvePath({ items: ['a'] }, [f('items'), { kind: 'index', index: 99 }])).toEqual([]);
    expect(resolvePath({ items: 'not_array' }, [f('items'), { kind: 'index', index: 0 }])).toEqual([]);
    expect(resolvePath({ items: 'not_array' }, [f('items'), { kind: 'any_index' }])).toEqual([]);
    expect(resolvePath({ b: { x: 2 }, a: { x: 1 } }, [{ kind: 'wildcard' }, f('x')])).toEqual([1, 2]);
    expect(resolvePath('string', [{ kind: 'wildcard' }])).toEqual([]);
    expect(resolvePath({ a: 1 }, [])).toEqual([{ a: 1 }]);
    expect(resolvePath({ a: 1 }, [f('b')])).toEqual([]);
    expect(resolvePath({ a: 1 }, [f('toString')])).toEqual([]);
  });

  it('valueToString', () => {
    expect([valueToString('hello'), valueToString(null), valueToString(true), valueToString(false), valueToString(42), valueToString(2.5)]).toEqual([
      'hello',
      '',
      'true',
      'false',
      '42',
      '2.5',
    ]);
    expect(valueToString([1, 2])).toBe('[1,2]');
    expect(valueToString({ b: 1, a: { d: 1, c: 2 } })).toBe('{"a":{"c":2,"d":1},"b":1}');
  });

  it('specificity: exact > glob > regex, with arguments > without, then count, then precision', () => {
    const spec = (p: string, id: string, args: JsonValue = {}): Specificity => patternMatches(parse(p), id, args) as Specificity;
    expect(compareSpecificity(spec('Bash', 'Bash'), spec('Bas*', 'Bash'))).toBeGreaterThan(0);
    expect(compareSpecificity(spec('Bas*', 'Bash'), spec('/Ba/', 'Bash'))).toBeGreaterThan(0);
    expect(compareSpecificity(spec('Bash(npm *)', 'Bash', { command: 'npm i' }), spec('Bash', 'Bash', { command: 'npm i' }))).toBeGreaterThan(0);
    expect(spec('T(a = "1", b ~ "*", c =~ "x")', 'T', { a: '1', b: 'y', c: 'x' })).toEqual({ toolKind: 3, hasArgs: true, fieldCount: 3, fieldPrecision: 6 });
    expect(spec('Bash(npm *)', 'Bash', { c: 'npm i' })).toEqual({ toolKind: 3, hasArgs: true, fieldCount: 1, fieldPrecision: 2 });
  });

  it('a hostile regex cannot hang a match: linear time', () => {
    const m = compilePattern(parse('T(s =~ "(a+)+$")'));
    expect(m('T', { s: `${'a'.repeat(50_000)}b` })).toBeUndefined();
    expect(m('T', { s: 'a'.repeat(50_000) })).toBeDefined();
    expect(compilePattern(parse('/(x+x+)+y/'))(`${'x'.repeat(50_000)}`, {})).toBeUndefined();
  });
});

describe('toolIdMatch: the anchored dialect of allowed_tools / excluded_tools', () => {
  const parity = JSON.parse(readFileSync(resolve(repo, 'fixtures/patterns/catalog-glob-parity.json'), 'utf8')) as {
    pattern: string;
    value: string;
    expected: boolean;
    note: string;
  }[];
  it.each(parity.map((c) => [c.pattern, c.value, c.expected, c.note] as const))('%s vs %s → %s (%s)', (pattern, value, expected) => {
    expect(toolIdMatch(pattern, value)).toBe(expected);
  });

  it('the vectors of tool_id.rs', () => {
    expect([toolIdMatch('Bash', 'Bash'), toolIdMatch('Bash', 'bash'), toolIdMatch('Bash', 'Bashx')]).toEqual([true, false, false]);
    expect([toolIdMatch('*', ''), toolIdMatch('*', 'Bash'), toolIdMatch('*', 'mcp:weather/forecast')]).toEqual([true, true, true]);
    expect([toolIdMatch('mcp:*', 'mcp:fs/read'), toolIdMatch('mcp:*', 'Bash'), toolIdMatch('*Tool', 'BashTool'), toolIdMatch('*Tool', 'Tool')]).toEqual([
      true,
      false,
      true,
      true,
    ]);
    expect([toolIdMatch('mcp:*/read', 'mcp:fs/read'), toolIdMatch('mcp:*/read', 'mcp:fs/write')]).toEqual([true, false]);
    expect([toolIdMatch('foo\\*bar', 'foo*bar'), toolIdMatch('foo\\*bar', 'foobar'), toolIdMatch('foo\\*bar', 'fooXbar')]).toEqual([true, false, false]);
    expect([toolIdMatch('foo\\\\bar', 'foo\\bar'), toolIdMatch('foo\\\\bar', 'foobar')]).toEqual([true, false]);
    expect([toolIdMatch('a/b:c_d', 'a/b:c_d'), toolIdMatch('a/b:c_d', 'a/b:c-d')]).toEqual([true, false]);
    expect(toolIdMatch('wetter_*', 'wetter_größe')).toBe(true);
    expect(toolIdPatternError('')).toBe('empty');
    expect(toolIdPatternError('foo\\')).toBe('dangling_escape');
    for (const p of ['*', 'Bash', 'mcp:*', 'foo\\*bar', 'foo\\\\bar']) expect(toolIdPatternError(p)).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

const ident = fc.stringMatching(/^[A-Za-z0-9_-]{1,6}$/);
const segment: fc.Arbitrary<PathSegment> = fc.oneof(
  ident.map((name) => ({ kind: 'field' as const, name })),
  fc.constant({ kind: 'wildcard' as const }),
  fc.nat(20).map((index) => ({ kind: 'index' as const, index })),
  fc.constant({ kind: 'any_index' as const }),
);
/** A path starts with a field or `*`; indexes follow a segment. */
const path = fc
  .tuple(
    fc.oneof(
      ident.map((name): PathSegment => ({ kind: 'field', name })),
      fc.constant<PathSegment>({ kind: 'wildcard' }),
    ),
    fc.array(segment, { maxLength: 4 }),
  )
  .map(([h, t]) => [h, ...t]);
const op = fc.constantFrom<MatchOp>('glob', 'exact', 'not_glob', 'not_exact', 'regex', 'not_regex');
const anyText = fc.string({ unit: 'grapheme', maxLength: 8 });
const condition: fc.Arbitrary<FieldCondition> = fc.tuple(path, op, anyText, fc.stringMatching(/^[a-z.*|()^$]{0,6}$/)).map(([p, o, text, re]) => ({
  path: p,
  op: o,
  value: o === 'regex' || o === 'not_regex' ? (parsePatternRegexOk(re) ? re : 'x') : text,
}));
function parsePatternRegexOk(source: string): boolean {
  return parsePattern(`T(f =~ ${JSON.stringify(source)})`).ok;
}
const primaryValue = fc
  .stringMatching(/^[a-z0-9 *./_-]{1,10}$/)
  .map((s) => s.trim())
  .filter((v) => v !== '' && !v.startsWith('*') && !/^[a-z0-9_.-]*\s*[~=]/.test(v));
const args: fc.Arbitrary<ArgMatcher> = fc.oneof(
  fc.constant<ArgMatcher>({ kind: 'any' }),
  primaryValue.map((value): ArgMatcher => ({ kind: 'primary', value })),
  fc.array(condition, { minLength: 1, maxLength: 3 }).map((conditions): ArgMatcher => ({ kind: 'fields', conditions })),
);
const pattern: fc.Arbitrary<ToolCallPattern> = fc.record({
  tool: fc.oneof(
    fc
      .stringMatching(/^[A-Za-z0-9_:.-]{1,8}$/)
      .filter((n) => !n.startsWith('/'))
      .map((name) => ({ kind: 'exact' as const, name })),
    fc.stringMatching(/^[A-Za-z0-9_]{0,4}[*?][A-Za-z0-9_*]{0,4}$/).map((p) => ({ kind: 'glob' as const, pattern: p })),
    fc
      .stringMatching(/^[a-z_|.*]{1,8}$/)
      .filter((s) => parsePattern(`/${s}/`).ok)
      .map((source) => ({ kind: 'regex' as const, source })),
  ),
  args,
});

describe('properties', () => {
  it('parse ∘ format = id over generated patterns', () => {
    fc.assert(
      fc.property(pattern, (p) => {
        expect(parse(formatPattern(p))).toEqual(p);
      }),
      { numRuns: 500 },
    );
  });

  it('format ∘ parse is stable over arbitrary text: whatever parses prints to a text that parses to the same pattern', () => {
    const text = fc.oneof(
      fc.string({ maxLength: 30 }),
      pattern.map(formatPattern).chain((t) => fc.nat(t.length).map((cut) => t.slice(0, cut) + t.slice(cut + 1))),
    );
    fc.assert(
      fc.property(text, (t) => {
        const r = parsePattern(t);
        if (r.ok) expect(parse(formatPattern(r.value))).toEqual(r.value);
      }),
      { numRuns: 500 },
    );
  });

  it('specificity is a total order consistent with the tiers (tool kind, then arguments, then count, then precision)', () => {
    const specificity = fc.record({
      toolKind: fc.constantFrom<1 | 2 | 3>(1, 2, 3),
      hasArgs: fc.boolean(),
      fieldCount: fc.nat(255),
      fieldPrecision: fc.nat(255),
    });
    fc.assert(
      fc.property(specificity, specificity, specificity, (a, b, c) => {
        const ab = Math.sign(compareSpecificity(a, b));
        expect(Math.sign(compareSpecificity(b, a))).toBe(-ab || 0);
        expect(compareSpecificity(a, a)).toBe(0);
        if (ab === 0) expect(a).toEqual(b);
        if (compareSpecificity(a, b) <= 0 && compareSpecificity(b, c) <= 0) expect(compareSpecificity(a, c)).toBeLessThanOrEqual(0);
        if (a.toolKind !== b.toolKind) expect(ab).toBe(Math.sign(a.toolKind - b.toolKind));
        else if (a.hasArgs !== b.hasArgs) expect(ab).toBe(a.hasArgs ? 1 : -1);
      }),
    );
  });

  it('matching does not depend on the order of object keys', () => {
    const json = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>;
    const reorder = (v: JsonValue, seed: number): JsonValue => {
      if (Array.isArray(v)) return v.map((x: JsonValue) => reorder(x, seed));
      if (v === null || typeof v !== 'object') return v;
      const keys = Object.keys(v);
      const rotated = keys.map((_, i) => keys[(i + seed) % keys.length] as string).reverse();
      return Object.fromEntries(rotated.map((k) => [k, reorder(v[k] as JsonValue, seed + 1)]));
    };
    fc.assert(
      fc.property(pattern, json, fc.nat(7), (p, a, seed) => {
        const m = compilePattern({ ...p, tool: { kind: 'glob', pattern: '*' } });
        expect(m('T', reorder(a, seed))).toEqual(m('T', a));
      }),
      { numRuns: 300 },
    );
  });
});
