import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repo } from './sessions.ts';

/** The size of the replay corpus, as README.md and docs/transcript-format.md give it, is the corpus's. */
describe('the replay corpus as the docs count it', () => {
  const files = readdirSync(join(repo, 'fixtures/runs')).filter((f) => f.endsWith('.jsonl'));

  it('docs/transcript-format.md: the runs there are now, and their events', () => {
    const doc = readFileSync(join(repo, 'docs/transcript-format.md'), 'utf8').replace(/\s+/g, ' ');
    const events = files.reduce((n, f) => n + (readFileSync(join(repo, 'fixtures/runs', f), 'utf8').match(/^\{"type":"event"/gm)?.length ?? 0), 0);
    const said = /the corpus \((\d+) short runs, ([\d,]+) events\)/.exec(doc);
    expect([Number(said?.[1]), Number(said?.[2]?.replaceAll(',', ''))]).toEqual([files.length, events]);
  });

  it('README: `npm run replay` replays that many runs', () => {
    const readme = readFileSync(join(repo, 'README.md'), 'utf8').replace(/\s+/g, ' ');
    expect(Number(/`npm run replay` replays the (\d+) recorded runs of `fixtures\/runs\/`/.exec(readme)?.[1])).toBe(files.length);
  });
});
