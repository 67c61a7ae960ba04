/**
 * Edits every leaf of every record of the corpus, one at a time, and replays each edited run: a
 * string gets one character changed (last and first), a number ±1, a boolean flipped, an array element
 * removed — each line kept compact, as records are written. Prints how many edits the replay reported
 * and, by record type and field, the ones it did not.
 *
 *   npm run replay:edits            (about a minute)
 *
 * With `--structural`, edits the history instead: every record (the header aside) deleted, swapped
 * with the next one, and duplicated, one edit at a time. Each is reported where the edited transcript
 * first differs from the recorded one; prints how many were, and each one that was not (not
 * reported, or reported at another line) with where the replay said it diverged.
 *
 *   npm run replay:edits -- --structural
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { replayTranscript } from '../src/replay/replayer.ts';

type Path = (string | number)[];
const dir = resolve(import.meta.dirname, '../fixtures/runs');

function leaves(v: unknown, path: Path = [], inArray = false, out: { path: Path; value: unknown; inArray: boolean }[] = []) {
  if (Array.isArray(v)) {
    if (v.length === 0) out.push({ path, value: v, inArray });
    v.forEach((x, i) => {
      leaves(x, [...path, i], true, out);
    });
  } else if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 0) out.push({ path, value: v, inArray });
    for (const k of keys) leaves((v as Record<string, unknown>)[k], [...path, k], false, out);
  } else out.push({ path, value: v, inArray });
  return out;
}

type Edit = (parent: Record<string | number, unknown>, key: string | number) => void;
const editsOf = (value: unknown, inArray: boolean): Edit[] => {
  const out: Edit[] = [];
  if (typeof value === 'string') {
    out.push((p, k) => {
      const s = p[k] as string;
      p[k] = s === '' ? 'x' : s.slice(0, -1) + (s.endsWith('x') ? 'y' : 'x');
    });
    if (value.length > 1) out.push((p, k) => (p[k] = ((p[k] as string).startsWith('Q') ? 'R' : 'Q') + (p[k] as string).slice(1)));
  }
  if (typeof value === 'number')
    out.push(
      (p, k) => (p[k] = (p[k] as number) + 1),
      (p, k) => (p[k] = (p[k] as number) - 1),
    );
  if (typeof value === 'boolean') out.push((p, k) => (p[k] = !(p[k] as boolean)));
  if (inArray) out.push((p, k) => (p as unknown as unknown[]).splice(k as number, 1));
  return out;
};

/** Every record deleted, swapped with the next, duplicated: reported at the first line the edit changed? */
async function structural(): Promise<void> {
  let tried = 0;
  let reported = 0;
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()) {
    const lines = readFileSync(join(dir, file), 'utf8').trimEnd().split('\n');
    for (let i = 1; i < lines.length; i++) {
      for (const kind of ['delete', 'swap', 'duplicate'] as const) {
        if (kind === 'swap' && i === lines.length - 1) continue;
        const edited = [...lines];
        if (kind === 'delete') edited.splice(i, 1);
        else if (kind === 'duplicate') edited.splice(i + 1, 0, lines[i] as string);
        else [edited[i], edited[i + 1]] = [lines[i + 1] as string, lines[i] as string];
        let k = 0;
        while (k < lines.length && k < edited.length && lines[k] === edited[k]) k++;
        if (k === lines.length && k === edited.length) continue;
        tried++;
        const report = await replayTranscript(`${edited.join('\n')}\n`);
        if (!report.identical && report.at?.line === k + 1) reported++;
        else
          console.log(
            `${report.identical ? 'not reported' : `reported at line ${report.at?.line} (${report.divergence?.port}: ${report.divergence?.message})`}: ${file} ${kind} line ${i + 1}, first changed line ${k + 1}`,
          );
      }
    }
  }
  console.log(`${tried} structural edits, ${reported} reported at the first line they changed (${((100 * reported) / tried).toFixed(3)} %)`);
}

if (process.argv.includes('--structural')) {
  await structural();
  process.exit(0);
}

let total = 0;
const missed = new Map<string, number>();
for (const file of readdirSync(dir)
  .filter((f) => f.endsWith('.jsonl'))
  .sort()) {
  const lines = readFileSync(join(dir, file), 'utf8').trimEnd().split('\n');
  for (const [i, line] of lines.entries()) {
    const record = JSON.parse(line) as Record<string, unknown>;
    for (const leaf of leaves(record)) {
      if (leaf.path.length === 0) continue;
      for (const edit of editsOf(leaf.value, leaf.inArray)) {
        const copy = JSON.parse(line) as Record<string | number, unknown>;
        let parent = copy;
        for (const k of leaf.path.slice(0, -1)) parent = parent[k] as Record<string | number, unknown>;
        edit(parent, leaf.path.at(-1) as string | number);
        const edited = JSON.stringify(copy);
        if (edited === line) continue;
        total++;
        const report = await replayTranscript(`${lines.map((l, j) => (j === i ? edited : l)).join('\n')}\n`);
        if (report.identical) {
          const where = `${String(record['type'])} ${leaf.path.map((k) => (typeof k === 'number' ? '#' : k)).join('.')}`;
          missed.set(where, (missed.get(where) ?? 0) + 1);
          console.log(`not reported: ${file}:${i + 1} ${leaf.path.join('.')}`);
        }
      }
    }
  }
}
const notReported = [...missed.values()].reduce((a, b) => a + b, 0);
console.log(`${total} single-leaf edits, ${total - notReported} reported (${((100 * (total - notReported)) / total).toFixed(3)} %)`);
for (const [where, n] of [...missed].sort((a, b) => b[1] - a[1])) console.log(`  ${n}\t${where}`);
