import ts from 'typescript';
import type { ImportEdge } from './import-graph.ts';

/**
 * ARCHITECTURE.md: contract ← core ← runtime ← {plugins, providers, protocols} ← app ← {server, stores, replay} ← {testing, inspector} ← cli
 * (`app`: a user's app module made into runtime parts, which a replay remakes plugins with).
 * A module may import its own layer or a lower one; siblings of one tier do not import each other
 * (protocols/<x> does not import protocols/<y> either); nothing imports cli; `testing` may use any
 * layer below cli, and only `index.ts` re-exports it and the cli uses it (`awaken fuzz` runs its kit).
 */
const TIER: Readonly<Record<string, number>> = {
  contract: 0,
  core: 1,
  runtime: 2,
  plugins: 3,
  providers: 3,
  protocols: 3,
  app: 3.5,
  server: 4,
  stores: 4,
  replay: 4,
  testing: 5,
  inspector: 5,
  cli: 6,
};

/** Packages the pure core and the contract may use. */
export const CORE_PACKAGES: readonly string[] = ['zod'];

/**
 * Besides those, the tool patterns of the core (`src/core/pattern/`) may use one pure, linear-time
 * regex engine (docs/adr/0030-linear-time-regex.md).
 */
export const PATTERN_PACKAGES: readonly string[] = ['re2js'];

export function moduleOf(path: string): { layer: string; sub?: string } | undefined {
  const m = /^src\/([^/]+)(?:\/([^/]+))?/.exec(path);
  if (m === null) return undefined;
  const layer = m[1] as string;
  if (!(layer in TIER)) return undefined;
  return m[2] !== undefined && m[2].endsWith('.ts') === false ? { layer, sub: m[2] } : { layer };
}

/** `createAwaken` (docs/embedding.md): exported from `awaken-ts/server`, assembled like `awaken serve`. */
const EMBED = 'src/server/embed.ts';

/** Every edge that breaks the layering, with the reason. */
export function layeringViolations(edges: readonly ImportEdge[]): string[] {
  const out: string[] = [];
  for (const { from, to } of edges) {
    // The embedding entry assembles a whole server (stores, the studio) as the CLI does: it sits
    // where the CLI sits, and only the CLI and testing stay out of its reach.
    const src = from === EMBED ? { layer: 'cli' } : moduleOf(from);
    if (src === undefined) continue;
    if (!to.startsWith('src/')) {
      const pattern = from.startsWith('src/core/pattern/') && PATTERN_PACKAGES.includes(to);
      if ((src.layer === 'core' || src.layer === 'contract') && !CORE_PACKAGES.includes(to) && !pattern) {
        out.push(
          `${from} imports package ${to}: ${src.layer} may import only ${CORE_PACKAGES.join(', ')}${src.layer === 'core' ? ` (and, in src/core/pattern/, ${PATTERN_PACKAGES.join(', ')})` : ''}`,
        );
      }
      continue;
    }
    const dst = moduleOf(to);
    if (dst === undefined) {
      if (from !== 'src/index.ts') out.push(`${from} imports ${to}, which belongs to no layer`);
      continue;
    }
    const a = TIER[src.layer] as number;
    const b = TIER[dst.layer] as number;
    if (dst.layer === 'cli' && src.layer !== 'cli') out.push(`${from} imports cli (${to}): nothing imports cli`);
    else if (dst.layer === 'testing' && src.layer !== 'testing' && src.layer !== 'cli') out.push(`${from} imports testing (${to})`);
    else if (b > a) out.push(`${from} (${src.layer}) imports ${to} (${dst.layer}): arrow goes the wrong way`);
    else if (a === b && src.layer !== dst.layer) out.push(`${from} (${src.layer}) imports its sibling ${dst.layer} (${to})`);
    else if (src.layer === 'protocols' && dst.layer === 'protocols' && src.sub !== undefined && dst.sub !== undefined && src.sub !== dst.sub)
      out.push(`${from} imports another protocol (${to})`);
    // A protocol encodes and decodes over the contract: what a decoder gives (an `InboundRun`, a
    // `Decision`) is the contract's, so a protocol builds against no runtime at all.
    else if (src.layer === 'protocols' && dst.layer === 'runtime') out.push(`${from} imports the runtime (${to}): a protocol speaks the contract`);
    // The cluster bus carries decisions between instances; what a decision is belongs to the contract, not to the loop.
    else if (from === 'src/runtime/cluster-bus.ts' && to.startsWith('src/runtime/run-loop'))
      out.push(`${from} imports the loop (${to}): the bus carries contract values`);
  }
  return out;
}

/** Nondeterminism the pure core must never touch (ARCHITECTURE.md → Determinism). */
export const CORE_BANNED: readonly [RegExp, string][] = [
  [/\bDate\.now\b|\bnew Date\b/, 'reads the clock'],
  [/\bperformance\.now\b|\bprocess\.hrtime\b/, 'reads a timer'],
  [/\bMath\.random\b|\bcrypto\b|\brandomUUID\b/, 'draws randomness or an id'],
  [/\bsetTimeout\b|\bsetInterval\b|\bsetImmediate\b/, 'uses timers'],
  [/\bfetch\s*\(|\bprocess\.(env|stdout|stderr|argv)\b|\brequire\s*\(/, 'does I/O'],
];

export function nondeterminismIn(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  return CORE_BANNED.filter(([re]) => re.test(code)).map(([, why]) => why);
}

/**
 * State the pure core could keep between calls at module level (issue: a truly pure core): a `let`
 * or `var`; a container (`new …`, an array or object literal) neither typed read-only (`readonly
 * T[]`, `ReadonlyMap`, `ReadonlySet`, `Readonly<…>`) nor frozen (`Object.freeze`, `as const`); a
 * static class field that is not `readonly`. State inside a function or an instance is not this
 * check's business.
 */
export function moduleStateIn(text: string): string[] {
  const sf = ts.createSourceFile('x.ts', text, ts.ScriptTarget.ES2022, true);
  const out: string[] = [];
  const readOnlyType = (type: ts.TypeNode | undefined): boolean => type !== undefined && /^(readonly\s|Readonly(Map|Set|Array)?<)/.test(type.getText(sf));
  for (const statement of sf.statements) {
    if (ts.isVariableStatement(statement)) {
      const flags = statement.declarationList.flags;
      const kind = flags & ts.NodeFlags.Const ? 'const' : flags & ts.NodeFlags.Let ? 'let' : 'var';
      for (const d of statement.declarationList.declarations) {
        const name = d.name.getText(sf);
        if (kind !== 'const') {
          out.push(`module-level ${kind} '${name}'`);
          continue;
        }
        const init = d.initializer;
        const container = init !== undefined && (ts.isNewExpression(init) || ts.isArrayLiteralExpression(init) || ts.isObjectLiteralExpression(init));
        if (container && !readOnlyType(d.type)) out.push(`module-level container '${name}' is neither read-only nor frozen`);
      }
    } else if (ts.isClassDeclaration(statement)) {
      for (const member of statement.members) {
        const mods = ts.canHaveModifiers(member) ? (ts.getModifiers(member) ?? []) : [];
        const isStatic = mods.some((m) => m.kind === ts.SyntaxKind.StaticKeyword);
        const isReadonly = mods.some((m) => m.kind === ts.SyntaxKind.ReadonlyKeyword);
        if (ts.isPropertyDeclaration(member) && isStatic && !isReadonly)
          out.push(`static field '${member.name.getText(sf)}' of ${statement.name?.getText(sf) ?? 'a class'} is not readonly`);
      }
    }
  }
  return out;
}

/**
 * Instance state a class of the pure core keeps (issue: a truly pure core): a field that is not
 * `readonly`, or a `readonly` field that holds a container made at construction (`new …`, an array or
 * object literal) — an instance that changes after it is made. Each class named is reported unless
 * `allowed` lists it (with the reason it is not state between calls: a builder or a fold owned by one
 * caller, or an index invisible to values).
 */
export function instanceStateIn(text: string, allowed: ReadonlySet<string> = new Set()): string[] {
  const sf = ts.createSourceFile('x.ts', text, ts.ScriptTarget.ES2022, true);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isClassDeclaration(node) || ts.isClassExpression(node)) {
      const name = node.name?.getText(sf) ?? 'a class';
      if (!allowed.has(name)) {
        for (const member of node.members) {
          if (!ts.isPropertyDeclaration(member)) continue;
          const mods = ts.canHaveModifiers(member) ? (ts.getModifiers(member) ?? []) : [];
          if (mods.some((m) => m.kind === ts.SyntaxKind.StaticKeyword)) continue;
          const field = member.name.getText(sf);
          const init = member.initializer;
          if (!mods.some((m) => m.kind === ts.SyntaxKind.ReadonlyKeyword)) out.push(`field '${field}' of ${name} can change`);
          else if (init !== undefined && (ts.isNewExpression(init) || ts.isArrayLiteralExpression(init) || ts.isObjectLiteralExpression(init)))
            out.push(`field '${field}' of ${name} holds a container made at construction`);
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** The pure core never waits: no `async`, `await`, `.then(` or `Promise` outside comments (hooks and handlers are called by the runtime). */
export function waitingIn(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  const found: string[] = [];
  if (/\basync\b/.test(code)) found.push('declares an async function');
  if (/\bawait\b/.test(code)) found.push('awaits');
  if (/\.then\s*\(|\bPromise\.|\bnew Promise\b/.test(code)) found.push('chains a promise');
  return found;
}
