import { appendFileSync } from 'node:fs';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The chaos suite's knobs and report (docs/server.md → Faults): `AWAKEN_CHAOS_SEED` replays a run's
 * random choices (the seed is printed), `AWAKEN_CHAOS_SCALE` multiplies every count (`npm run chaos`
 * runs it at 5), `AWAKEN_CHAOS_REPORT` names a file the figures are appended to.
 */
export const SEED = Number(process.env['AWAKEN_CHAOS_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
export const SCALE = Math.max(1, Number(process.env['AWAKEN_CHAOS_SCALE'] ?? 1));

/** A seeded PRNG (mulberry32): each scenario gets its own stream from the seed and its name. */
export function rngOf(name: string): () => number {
  let state = SEED >>> 0;
  for (const c of name) state = ((state ^ c.charCodeAt(0)) * 2654435761) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Prints a scenario's figures on one line (and appends it to the report file when one is named). */
export function report(scenario: string, figures: Record<string, number | string>): void {
  const line = `chaos ${scenario}: ${Object.entries(figures)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ')} (seed ${SEED}, scale ${SCALE})\n`;
  process.stdout.write(line);
  const file = process.env['AWAKEN_CHAOS_REPORT'];
  if (file !== undefined && file !== '') appendFileSync(file, line);
}

/** A scripted model whose every answer is `pieces` text pieces `delayMs` apart (enough steps for any run). */
export function slowScript(pieces: number, delayMs: number, steps = 400): string {
  const file = join(mkdtempSync(join(tmpdir(), 'awaken-chaos-')), 'slow.json');
  const step = { text: Array.from({ length: pieces }, (_, i) => `piece ${i}; `), delay_ms: delayMs };
  writeFileSync(file, JSON.stringify(Array.from({ length: steps }, () => step)));
  return file;
}

/** The resident set of a process, in bytes (Linux). */
export async function rssOf(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  return Number(kb ?? 0) * 1024;
}
