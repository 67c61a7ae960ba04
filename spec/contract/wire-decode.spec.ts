import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AgentEventSchema } from '../../src/contract/event.ts';
import { ToolResultSchema } from '../../src/contract/tool.ts';
import { decodeWire, toWire } from '../../src/contract/wire.ts';
import * as arb from '../../src/testing/arbitraries.ts';

describe('decodeWire', () => {
  it('decodes canonical text', () => {
    fc.assert(
      fc.property(arb.agentEvent(), (e) => {
        expect(decodeWire(AgentEventSchema, toWire(AgentEventSchema, e))).toEqual({ ok: true, value: structuredClone(e) });
      }),
      { numRuns: 200 },
    );
  });

  it('reports malformed JSON as invalid_json', () => {
    const r = decodeWire(ToolResultSchema, '{"tool_name":');
    expect(r.ok === false && r.error.code).toBe('invalid_json');
  });

  it('names every offending field', () => {
    const r = decodeWire(ToolResultSchema, '{"tool_name":3,"status":"maybe","data":null}');
    expect(r).toEqual({
      ok: false,
      error: {
        code: 'invalid_value',
        issues: [expect.objectContaining({ path: 'tool_name' }), expect.objectContaining({ path: 'status' })],
      },
    });
  });

  it('never throws on arbitrary text', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        expect(() => decodeWire(AgentEventSchema, text)).not.toThrow();
      }),
      { numRuns: 300 },
    );
  });
});
