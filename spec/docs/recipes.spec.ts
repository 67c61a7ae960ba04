import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { repo, runSessions, sessionsOf, type Outcome } from './sessions.ts';

/**
 * docs/recipes.md is what a user types and sees: every session on it runs here as written (real
 * processes, a real `awaken serve` on a socket, `curl`), and each command's whole output is compared
 * with the page — ids, times, durations, transcript sizes and benchmark figures normalised
 * (`normalise` in ./sessions.ts says exactly which).
 */
const page = readFileSync(join(repo, 'docs/recipes.md'), 'utf8');
let outcomes: Outcome[] = [];

beforeAll(async () => {
  outcomes = await runSessions(page);
}, 240_000);

describe('docs/recipes.md', () => {
  it('has a session for each job: serve, record and judge live, judge a capture, replay, inspect, fuzz, bench', () => {
    expect([...new Set(sessionsOf(page).map((b) => b.section))]).toEqual([
      'Serve, and try it',
      'Serve with recording, and judge it live',
      'Judge a capture',
      'Replay the served runs',
      'Inspect a run',
      'Fuzz a plugin',
      'Bench an agent',
    ]);
  });

  it('every command prints what the page shows, whole', () => {
    expect(outcomes.length).toBe(sessionsOf(page).flatMap((b) => b.commands).length);
    const shown = (pick: (o: Outcome) => string) => outcomes.map((o) => `${o.section}: $ ${o.command}\n${pick(o)}`);
    expect(shown((o) => o.actual)).toEqual(shown((o) => o.expected));
  });
});
