// `npm run bench:peers` (from the repository root): the scenario of subjects.mjs on every framework,
// at N = 10, 100 and 1,000 steps, interleaved in rounds in one process. Reported: µs per step (median
// over rounds), the per-round ratio to awaken-ts (median), and bytes allocated per step (a batch
// inside a young generation large enough that no GC runs during it, checked). A framework whose one
// run at some N takes longer than LIMIT_MS is left out at that N (—).
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { allocatedPerCall } from 'awaken-ts/testing';
import { SUBJECTS } from './subjects.mjs';

const SIZES = [10, 100, 1_000];
const LIMIT_MS = 5_000;
const args = process.argv.slice(2);
const ROUNDS = Number(args[args.indexOf('--rounds') + 1] ?? 0) || 7;
const versions = JSON.parse((await import('node:fs')).readFileSync(new URL('./package.json', import.meta.url), 'utf8')).dependencies;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function timeOf(run, runs, steps) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < runs; i++) {
    const n = await run();
    if (n !== steps) throw new Error(`a run took ${n} inferences, not ${steps}`);
  }
  return Number(process.hrtime.bigint() - t0) / 1_000 / (runs * steps);
}

/** Bytes allocated per step (`allocatedPerCall`: batches of about 1,000 steps, halved until no GC runs during one). */
async function allocatedPerStep(run, steps) {
  const perRun = await allocatedPerCall(run, 1_000 / steps, globalThis.gc);
  return perRun === undefined ? undefined : perRun / steps;
}

const rows = [];
for (const steps of SIZES) {
  const cases = [];
  for (const [name, make] of SUBJECTS) {
    const run = await make(steps);
    const t0 = performance.now();
    await run();
    const once = performance.now() - t0;
    if (once > LIMIT_MS) {
      rows.push({ steps, name, usPerStep: undefined, ratio: undefined, bytesPerStep: undefined });
      continue;
    }
    // Each case runs about the same time per round: ~150 ms, at least one run.
    cases.push({ name, run, runs: Math.max(1, Math.round(150 / Math.max(once, 0.05))) });
  }
  for (const c of cases) await timeOf(c.run, c.runs, steps); // warm-up
  const times = new Map(cases.map((c) => [c.name, []]));
  const ratios = new Map(cases.map((c) => [c.name, []]));
  for (let r = 0; r < ROUNDS; r++) {
    const round = new Map();
    for (let i = 0; i < cases.length; i++) {
      const c = cases[(i + r) % cases.length];
      round.set(c.name, await timeOf(c.run, c.runs, steps));
    }
    const base = round.get(SUBJECTS[0][0]);
    for (const [name, t] of round) {
      times.get(name).push(t);
      ratios.get(name).push(t / base);
    }
  }
  for (const c of cases) rows.push({ steps, name: c.name, usPerStep: median(times.get(c.name)), ratio: median(ratios.get(c.name)), bytesPerStep: await allocatedPerStep(c.run, steps) });
  process.stderr.write(`bench:peers: N = ${steps} done\n`);
}

const cell = (v, digits) => (v === undefined ? '—' : v.toFixed(digits));
const names = SUBJECTS.map(([n]) => n);
const at = (name, steps) => rows.find((r) => r.name === name && r.steps === steps);
const table = [
  `| µs per step (median) | ${SIZES.map((n) => `N = ${n.toLocaleString('en')}`).join(' | ')} | × awaken-ts (N = 10 / 100 / 1,000) | KiB allocated per step (N = 10 / 100 / 1,000) |`,
  `|---|${SIZES.map(() => '---').join('|')}|---|---|`,
  ...names.map((name) => `| ${name} | ${SIZES.map((n) => cell(at(name, n)?.usPerStep, 1)).join(' | ')} | ${SIZES.map((n) => cell(at(name, n)?.ratio, 1)).join(' / ')} | ${SIZES.map((n) => { const b = at(name, n)?.bytesPerStep; return b === undefined ? '—' : (b / 1024).toFixed(0); }).join(' / ')} |`),
].join('\n');
const machine = `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${ROUNDS} rounds, ${new Date().toISOString().slice(0, 10)}`;
const pinned = Object.entries(versions).filter(([k]) => k !== 'awaken-ts' && k !== 'zod').map(([k, v]) => `\`${k}\` ${v.replace('npm:ai@', 'ai@')}`).join(', ');
const md = `# awaken-ts beside its peers

${machine}. \`npm run bench:peers\`; scenario in \`bench/peers/subjects.mjs\`: N steps, each an inference
answering one \`echo\` tool call, then a text answer; every framework runs with a hand-written mock of
its own model interface answering in O(1), and the same echo tool. Cases interleave in rounds in one
process; — means one run took longer than ${LIMIT_MS / 1000} s (or, for memory, that no batch ran
without a collection). Memory is the heap's growth over a batch without a collection, the median of
three: a framework whose batch overlaps the sweeping of an earlier collection can read low. Versions:
${pinned}.

${table}
`;
const out = join(import.meta.dirname, '../results');
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'peers.md'), md);
writeFileSync(join(out, 'peers.json'), `${JSON.stringify({ machine, rows }, null, 2)}\n`);
process.stdout.write(md);
