import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRecord, readLine } from '../../src/replay/transcript.ts';

/** The general rule of a record line: valid by its schema and written exactly as the schema writes it. */
function general(t: string): { ok: boolean; record?: unknown } {
  let json: unknown;
  try {
    json = JSON.parse(t);
  } catch {
    return { ok: false };
  }
  const parsed = parseRecord(json);
  return parsed.success && JSON.stringify(parsed.data) === t ? { ok: true, record: parsed.data } : { ok: false };
}

const number = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(0, -0, 1e21, 1.5e-7, 1700000000000));
const envLine = fc.oneof(
  fc.record({ draw: fc.constantFrom('now', 'random'), value: number }).map((r) => JSON.stringify({ type: 'env', ...r })),
  fc.record({ kind: fc.string(), value: fc.string() }).map((r) => JSON.stringify({ type: 'env', draw: 'id', ...r })),
  number.map((ms) => JSON.stringify({ type: 'env', draw: 'sleep', ms })),
);
/** Hand-written spellings a writer could use for the same values: only the canonical ones are records. */
const spelled = fc
  .tuple(fc.constantFrom('now', 'random'), fc.constantFrom('1', '1.0', '1e3', '1E3', '-0', '0.5', '05', '1e+21', '-1', '1.5e-7', '2.50'))
  .map(([draw, n]) => `{"type":"env","draw":"${draw}","value":${n}}`);

describe('reading a transcript line', () => {
  it('property: an env line reads as the general rule reads it (same record, same verdict), canonical spellings only', () => {
    fc.assert(
      fc.property(fc.oneof(envLine, spelled), (t) => {
        const read = readLine(t, 1);
        const expected = general(t);
        expect(read.ok).toBe(expected.ok);
        if (read.ok) expect(read.record).toEqual(expected.record);
      }),
      { numRuns: 2000 },
    );
  });
});
