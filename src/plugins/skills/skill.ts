import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { err, ok, type Result } from '../../contract/result.ts';
import { whyUnreadable } from '../../contract/unreadable.ts';

/**
 * Skills (book: 使用 Skills 子系统): packages of instructions and resources an agent discovers,
 * activates and reads on demand. A skill is a `SKILL.md` — YAML front matter (`name`,
 * `description`, optional `allowed-tools`, `license`, `compatibility`, `metadata`) and a Markdown
 * body, the instructions — with its resource files beside it.
 */

const NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;

const FrontMatterSchema = z
  .object({
    name: z.string().min(1).max(64).regex(NAME, 'lowercase letters, digits and single hyphens, not at either end'),
    description: z.string().trim().min(1).max(1024),
    'allowed-tools': z.union([z.string(), z.array(z.string().min(1))]).optional(),
    license: z.string().optional(),
    compatibility: z.string().max(500).optional(),
    metadata: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String)).optional(),
  })
  .strict();

/** What a SKILL.md says. */
export interface SkillDocument {
  readonly name: string;
  readonly description: string;
  /** Tools the skill uses: granted for the run when it is activated (with the permission plugin). */
  readonly allowedTools: readonly string[];
  readonly license?: string;
  readonly compatibility?: string;
  readonly metadata: Readonly<Record<string, string>>;
  /** The body of SKILL.md: what the agent follows while the skill is active. */
  readonly instructions: string;
}

/** A skill: its document and its resources. */
export interface Skill extends SkillDocument {
  /**
   * A resource by its path relative to the skill (`references/guide.md`); a path out of the skill is
   * refused, and so is a resource of more than `maxBytes` (default: no bound), without reading it.
   */
  resource(path: string, maxBytes?: number): Result<string, string>;
  /** The resource paths the skill holds, sorted. */
  resources(): readonly string[];
  /**
   * The file of a script the skill ships (a path under its `scripts/` folder), to be run in the
   * sandbox; absent for a skill that has no files of its own (one embedded in an agent's spec).
   */
  script?(path: string): Result<string, string>;
  /** The skill's folder on disk (what a script of it may read), for a skill that has one. */
  readonly folder?: string;
}

/** Parses a SKILL.md: front matter between `---` lines, then the body; errors name the field. */
export function parseSkillMd(text: string): Result<SkillDocument, string> {
  const m = /^\uFEFF?---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)([\s\S]*)$/.exec(text);
  if (m === null) return err('no front matter: SKILL.md starts with a --- line, the YAML fields, and another --- line');
  let data: unknown;
  try {
    data = parseYaml(m[1] as string);
  } catch (e) {
    return err(`front matter is not YAML: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
  }
  const parsed = FrontMatterSchema.safeParse(data ?? {});
  if (!parsed.success) return err(parsed.error.issues.map((i) => `${i.path.join('.') || 'front matter'}: ${i.message}`).join('; '));
  const f = parsed.data;
  const tools = f['allowed-tools'];
  return ok({
    name: f.name,
    description: f.description,
    allowedTools: tools === undefined ? [] : typeof tools === 'string' ? tools.split(/[\s,]+/).filter((t) => t !== '') : tools,
    ...(f.license !== undefined ? { license: f.license } : {}),
    ...(f.compatibility !== undefined ? { compatibility: f.compatibility } : {}),
    metadata: f.metadata ?? {},
    instructions: (m[2] as string).trim(),
  });
}

/** A resource path relative to its skill, or why not (absolute, or escaping with `..`). */
function relativeResource(path: string): Result<string, string> {
  if (path === '' || isAbsolute(path) || /^[A-Za-z]:/.test(path)) return err(`'${path}' is not a path inside the skill`);
  const parts = path.replaceAll('\\', '/').split('/');
  if (parts.includes('..')) return err(`'${path}' leaves the skill`);
  return ok(parts.filter((p) => p !== '' && p !== '.').join('/'));
}

/** Why a resource is not returned: its size, over what a read may return. */
const tooLarge = (path: string, skill: string, bytes: number, maxBytes: number): string =>
  `'${path}' of skill '${skill}' is ${bytes} bytes, more than a resource read may return (${maxBytes} bytes: skills.max_resource_bytes)`;

/** A file's bytes, or `undefined` when it holds more than `maxBytes`: never more than that (and one) is read. */
function readAtMost(file: string, maxBytes: number): Buffer | undefined {
  const fd = openSync(file, 'r');
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(64 * 1024, maxBytes + 1 - total));
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) return Buffer.concat(chunks, total);
      chunks.push(chunk.subarray(0, n));
      total += n;
      if (total > maxBytes) return undefined;
    }
  } finally {
    closeSync(fd);
  }
}

/** A skill compiled into the program: its SKILL.md text and its resources by path. */
export function embeddedSkill(skillMd: string, resources: Readonly<Record<string, string>> = {}): Result<Skill, string> {
  const doc = parseSkillMd(skillMd);
  if (!doc.ok) return doc;
  const files = new Map<string, string>();
  for (const [p, text] of Object.entries(resources)) {
    const rel = relativeResource(p);
    if (!rel.ok) return err(`resource ${rel.error}`);
    files.set(rel.value, text);
  }
  return ok({
    ...doc.value,
    resource: (path, maxBytes = Infinity) => {
      const rel = relativeResource(path);
      if (!rel.ok) return rel;
      const text = files.get(rel.value);
      if (text === undefined) return err(`no resource '${rel.value}' in skill '${doc.value.name}'`);
      const bytes = Buffer.byteLength(text);
      return bytes > maxBytes ? err(tooLarge(rel.value, doc.value.name, bytes, maxBytes)) : ok(text);
    },
    resources: () => [...files.keys()].sort(),
  });
}

/** Files under `dir`, relative, sorted (SKILL.md left out). */
function listFiles(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const rel = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) out.push(...listFiles(join(dir, entry.name), rel));
    else if (entry.isFile() && rel !== 'SKILL.md') out.push(rel);
  }
  return out.sort();
}

/**
 * A skill on disk; resources are read when asked for, never from outside its directory (symlinks
 * included), and one over the bound is refused from its size, unread.
 */
function fsSkill(dir: string, doc: SkillDocument): Skill {
  const root = realpathSync(dir);
  /** The real file of a path inside the skill, or why not: missing, or leaving the skill (symlinks followed). */
  const fileOf = (path: string, what: string): Result<{ readonly rel: string; readonly real: string }, string> => {
    const rel = relativeResource(path);
    if (!rel.ok) return rel;
    const file = resolve(root, rel.value);
    if (!existsSync(file) || !statSync(file).isFile()) return err(`no ${what} '${rel.value}' in skill '${doc.name}'`);
    const real = realpathSync(file);
    const inside = relative(root, real);
    if (inside.startsWith('..') || isAbsolute(inside) || inside.split(sep).includes('..')) return err(`'${path}' leaves the skill`);
    return ok({ rel: rel.value, real });
  };
  return {
    ...doc,
    folder: root,
    script: (path) => {
      const found = fileOf(path, 'script');
      if (!found.ok) return found;
      // The file itself, links followed, is under scripts/: a link there to another file of the skill is not a script.
      if (!found.value.rel.startsWith('scripts/') || relative(root, found.value.real).split(sep)[0] !== 'scripts')
        return err(`'${found.value.rel}' is not under the skill's scripts/ folder`);
      return ok(found.value.real);
    },
    resource: (path, maxBytes = Infinity) => {
      const found = fileOf(path, 'resource');
      if (!found.ok) return found;
      const { rel, real } = found.value;
      const size = statSync(real).size;
      if (size > maxBytes) return err(tooLarge(rel, doc.name, size, maxBytes));
      if (maxBytes === Infinity) return ok(readFileSync(real, 'utf8'));
      // Bounded even if the file grows after its size was read.
      const bytes = readAtMost(real, maxBytes);
      return bytes === undefined ? err(tooLarge(rel, doc.name, statSync(real).size, maxBytes)) : ok(bytes.toString('utf8'));
    },
    resources: () => listFiles(root),
  };
}

export interface Discovery {
  readonly skills: readonly Skill[];
  /** What was skipped and why: never a throw. */
  readonly warnings: readonly string[];
}

/**
 * The skills under `root`: each directory holding a `SKILL.md` whose `name` is the directory's
 * name. A bad file, a name that differs from its directory, a second skill of one name, or an
 * unreadable root is a warning, never a crash.
 */
export function discoverSkills(root: string): Discovery {
  const skills: Skill[] = [];
  const warnings: string[] = [];
  let entries: string[];
  try {
    entries = readdirSync(root, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
  } catch (e) {
    return { skills, warnings: [`${root}: cannot read the skills directory (${whyUnreadable(e, 'folder')})`] };
  }
  const seen = new Set<string>();
  for (const name of entries) {
    const file = join(root, name, 'SKILL.md');
    if (!existsSync(file)) continue;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      warnings.push(`${file}: unreadable (${e instanceof Error ? e.message : String(e)})`);
      continue;
    }
    const doc = parseSkillMd(text);
    if (!doc.ok) {
      warnings.push(`${file}: ${doc.error}`);
      continue;
    }
    if (doc.value.name !== name) {
      warnings.push(`${file}: name '${doc.value.name}' differs from its directory '${name}'`);
      continue;
    }
    if (seen.has(name)) continue;
    seen.add(name);
    skills.push(fsSkill(join(root, name), doc.value));
  }
  return { skills, warnings };
}

/** Skills by name; a name given twice is an error. */
export function skillRegistry(skills: readonly Skill[]): Result<ReadonlyMap<string, Skill>, string> {
  const map = new Map<string, Skill>();
  for (const s of skills) {
    if (map.has(s.name)) return err(`skill '${s.name}' is registered twice`);
    map.set(s.name, s);
  }
  return ok(new Map([...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
}
