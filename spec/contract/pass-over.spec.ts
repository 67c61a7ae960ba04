import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import type { InferenceExecutionError, ToolError } from '../../src/contract/errors.ts';
import type { TerminationReason } from '../../src/contract/lifecycle.ts';
import { passOver, unreachable } from '../../src/contract/never.ts';
import { encodeA2a } from '../../src/protocols/a2a/encoder.ts';
import { encodeAcp } from '../../src/protocols/acp/encoder.ts';
import { encodeAgUi } from '../../src/protocols/ag-ui/encoder.ts';
import { encodeMcp } from '../../src/protocols/mcp/encoder.ts';
import { encodeAiSdk } from '../../src/protocols/ai-sdk-v6/encoder.ts';
import { describeInferenceError, describeToolError } from '../../src/runtime/errors.ts';
import { terminationCode } from '../../src/runtime/store.ts';

/** A value of a kind this version does not know, as a newer writer or a stored record may give it. */
const newer = <T>(value: object): T => value as T;

describe('values from outside the types (src/contract/never.ts)', () => {
  it('unreachable throws, naming what it met; passOver answers nothing', () => {
    expect(() => unreachable(newer<never>({ kind: 'x' }), 'thing')).toThrow('unexpected thing: {"kind":"x"}');
    expect(passOver(newer<never>({ kind: 'x' }))).toBeUndefined();
  });

  it('an event type a newer instance wrote passes through the encoders unshown, the stream around it intact', () => {
    const events = [
      { event_type: 'run_start', thread_id: 't', run_id: 'r' },
      newer<AgentEvent>({ event_type: 'brand_new_event', data: 1 }),
      { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'natural_end' } },
    ] as AgentEvent[];
    const known = [events[0], events[2]] as AgentEvent[];
    expect(encodeAiSdk(events)).toEqual(encodeAiSdk(known));
    expect(encodeAgUi(events)).toEqual(encodeAgUi(known));
    expect(encodeA2a(events)).toEqual(encodeA2a(known));
    expect(encodeAcp(events)).toEqual(encodeAcp(known));
    expect(encodeMcp(events)).toEqual(encodeMcp(known));
  });

  it('an error code or a termination a store or transcript holds from another version is shown as it came, not thrown', () => {
    expect(describeInferenceError(newer<InferenceExecutionError>({ code: 'overheated', message: 'slow down' }))).toBe('overheated: slow down');
    expect(describeToolError(newer<ToolError>({ code: 'quota', message: 'none left' }))).toBe('quota: none left');
    expect(terminationCode(newer<TerminationReason>({ type: 'paused' }))).toBe('paused');
  });
});
