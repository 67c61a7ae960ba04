import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandsOf, sessionsOf } from './docs/sessions.ts';

/** The README's client snippets are the code the browser and client specs run: each line is in its source. */
const repo = resolve(import.meta.dirname, '..');
const readme = readFileSync(join(repo, 'README.md'), 'utf8');

/** Code blocks whose first line is a comment naming a source file: `// … : path/to/file`. */
const snippets = [...readme.matchAll(/```tsx?\n\/\/ [^\n]*?: ((?:browser|spec)\/\S+)\n([\s\S]*?)```/g)].map((m) => ({
  file: m[1] as string,
  body: m[2] as string,
}));

describe('README client snippets', () => {
  it('there are the AI SDK, the AG-UI and the CopilotKit ones', () => {
    expect(snippets.map((s) => s.file).sort()).toEqual(['browser/src/chat.tsx', 'spec/clients/ag-ui.spec.ts', 'spec/clients/copilotkit-core.spec.ts']);
  });

  it.each(snippets)('every line of the snippet from $file is in that file (the server URL aside)', ({ file, body }) => {
    const source = readFileSync(join(repo, file), 'utf8');
    // The page and the spec take the server from elsewhere; the README shows the default one.
    const forms = (line: string): string[] =>
      // biome-ignore lint/suspicious/noTemplateCurlyInString: these strings are the source text of template literals, matched in the files as written
      ['`${API}$1`', '`${server.url}$1`'].map((url) => line.trim().replace(/'http:\/\/127\.0\.0\.1:3000(\/[^']*)'/, url));
    for (const line of body.split('\n').filter((l) => l.trim() !== ''))
      expect(
        forms(line).some((f) => source.includes(f)),
        line,
      ).toBe(true);
  });
});

/** The commands of a ```sh block, continuation lines joined, trailing comments dropped. */
const shCommands = (block: string): string[] =>
  block
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((l) => l.replace(/\s+#\s.*$/, '').trim())
    .filter((l) => l !== '' && !l.startsWith('#'));

describe("README's server commands", () => {
  it('"Try it" is the client side of docs/recipes.md → Serve, and try it, which spec/docs/recipes.spec.ts runs against `awaken serve` and compares whole', () => {
    const tryIt = /Try it \(`docs\/server\.md`[^\n]*\n[^\n]*\n\n```sh\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(tryIt).toBeDefined();
    const recipes = sessionsOf(readFileSync(join(repo, 'docs/recipes.md'), 'utf8')).filter((b) => b.section === 'Serve, and try it');
    expect(commandsOf(recipes)).toEqual(['npx awaken serve   # keeps running; Ctrl-C stops it', ...shCommands(tryIt as string)]);
    // The stream command returns: it asks the server to end the stream once the thread is idle.
    expect(shCommands(tryIt as string)[2]).toContain('?until=idle');
  });
});

/** Whether an npm `engines.node` range admits some Node 20 release (npm warns EBADENGINE on Node 20 when it does not). */
function admitsNode20(range: string): boolean {
  const v = (s: string): number[] =>
    s
      .replace(/[xX*]/g, '0')
      .split('.')
      .map((n) => Number(n || 0));
  const cmp = (a: number[], b: number[]): number => a[0]! - b[0]! || (a[1] ?? 0) - (b[1] ?? 0) || (a[2] ?? 0) - (b[2] ?? 0);
  const LOW = [20, 0, 0];
  const HIGH = [21, 0, 0]; // exclusive
  return range.split('||').some((alternative) => {
    let lo = LOW;
    let hi = HIGH;
    let hiInclusive = false;
    for (const c of alternative
      .trim()
      .replace(/(>=|<=|>|<|\^|~)\s+/g, '$1')
      .split(/\s+/)
      .filter((t) => t !== '')) {
      const m = /^(>=|<=|>|<|\^|~)?v?(.*)$/.exec(c) as RegExpExecArray;
      const op = m[1] ?? '';
      const at = v(m[2] as string);
      const wild = /^[xX*]$/.test(m[2] as string) || /\.[xX*]/.test(m[2] as string) || (op === '' && (m[2] as string).split('.').length < 3);
      const upper = (a: number[]): number[] => (a.length >= 2 && /\.[xX*]$|^\d+\.\d+$/.test(m[2] as string) ? [a[0]!, a[1]! + 1, 0] : [a[0]! + 1, 0, 0]);
      if (m[2] === '*' || m[2] === '') continue;
      if (op === '>=' || op === '>') {
        if (cmp(at, lo) > 0) lo = at;
      } else if (op === '<') {
        if (cmp(at, hi) < 0) {
          hi = at;
          hiInclusive = false;
        }
      } else if (op === '<=') {
        if (cmp(at, hi) < 0) {
          hi = at;
          hiInclusive = true;
        }
      } else if (op === '^') {
        if (cmp(at, lo) > 0) lo = at;
        const u = [at[0]! + 1, 0, 0];
        if (cmp(u, hi) < 0) hi = u;
      } else if (op === '~') {
        if (cmp(at, lo) > 0) lo = at;
        const u = [at[0]!, (at[1] ?? 0) + 1, 0];
        if (cmp(u, hi) < 0) hi = u;
      } else if (wild) {
        if (cmp(at, lo) > 0) lo = at;
        const u = upper(at);
        if (cmp(u, hi) < 0) hi = u;
      } else {
        lo = at;
        hi = at;
        hiInclusive = true;
      }
    }
    return hiInclusive ? cmp(lo, hi) <= 0 : cmp(lo, hi) < 0;
  });
}

describe('README set-up: the EBADENGINE warnings of npm ci on Node 20', () => {
  it('reads engine ranges as npm does', () => {
    const cases: [string, boolean][] = [
      ['>=22', false],
      ['>=22.19.0', false],
      ['>= 22', false],
      ['>=20', true],
      ['>=20.18.1', true],
      ['>= 0.10', true],
      ['*', true],
      ['20.x || 22.x || 23.x', true],
      ['^18 || ^20 || >=22', true],
      ['>=23.5.0 || ^22.13.0 || ^20.17.0', true],
      ['^22.13.0', false],
      ['6.* || 8.* || >= 10.*', true],
      ['^10 || ^12 || >=14', true],
      ['4.x || >=6.0.0', true],
      ['18.x', false],
      ['<20', false],
      ['>=16 <21', true],
    ];
    expect(cases.map(([r]) => [r, admitsNode20(r)])).toEqual(cases);
  });

  it('the table names exactly the locked packages whose engines exclude every Node 20 release', () => {
    const lock = JSON.parse(readFileSync(join(repo, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { name?: string; version?: string; engines?: { node?: string } | string[]; dev?: boolean }>;
    };
    const warned = new Map<string, { dev: boolean; places: number }>();
    for (const [path, p] of Object.entries(lock.packages)) {
      const node = Array.isArray(p.engines) ? undefined : p.engines?.node;
      if (path === '' || node === undefined || admitsNode20(node)) continue;
      const id = `${p.name ?? path.replace(/^.*node_modules\//, '')}@${p.version}`;
      const seen = warned.get(id);
      warned.set(id, { dev: p.dev === true, places: (seen?.places ?? 0) + 1 });
    }
    // The README's table: each package cell's names, with the versions the lock holds.
    const table = /\| package \| brought by \|[\s\S]*?\n\n/.exec(readme)?.[0] ?? '';
    const named = [...table.matchAll(/^\| ([^|]+) \|/gm)]
      .slice(1)
      .flatMap((m) => [...(m[1] as string).matchAll(/`(@?[^@`]+)@([\d.]+)`/g)].map((n) => [n[1] as string, n[2] as string] as const));
    const inLock = [...warned.keys()].map((id) => /^(@?[^@]+)@(.*)$/.exec(id) as RegExpExecArray);
    expect(named.map(([name]) => name).sort()).toEqual(inLock.map((m) => m[1]).sort());
    for (const [name, version] of named) expect(inLock.find((m) => m[1] === name)?.[2]?.startsWith(version), `${name}@${version}`).toBe(true);
    // Development dependencies only; the counts the README gives.
    expect([...warned.values()].every((w) => w.dev)).toBe(true);
    const places = [...warned.values()].reduce((n, w) => n + w.places, 0);
    expect(readme).toContain(
      `for ${['', '', '', '', '', '', '', '', '', '', 'ten'][warned.size]} packages (${['', '', '', '', '', '', '', '', '', '', '', '', '', 'thirteen'][places]} warnings`,
    );
  });
});
