import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { AgentSpecSchema, ContextWindowPolicySchema } from '../../src/contract/agent-spec.ts';
import { AgentEventSchema } from '../../src/contract/event.ts';
import { InferenceOverrideSchema, ReasoningEffortSchema } from '../../src/contract/inference.ts';
import { RunStatusSchema, TerminationReasonSchema, ToolCallStatusSchema } from '../../src/contract/lifecycle.ts';
import { ContentBlockSchema, MessageSchema, ToolCallSchema } from '../../src/contract/message.ts';
import { PhaseSchema } from '../../src/contract/phase.ts';
import {
  StateErrorSchema,
  ToolErrorSchema,
  BuildErrorSchema,
  RuntimeErrorSchema,
  InferenceExecutionErrorSchema,
  StorageErrorSchema,
  ResolveErrorSchema,
} from '../../src/contract/errors.ts';
import {
  SuspendTicketSchema,
  ToolCallOutcomeSchema,
  ToolCallResumeSchema,
  ToolDescriptorSchema,
  ToolResultSchema,
} from '../../src/contract/tool.ts';
import { TokenUsageSchema } from '../../src/contract/usage.ts';
import { fromWire, toWire } from '../../src/contract/wire.ts';
import * as arb from '../../src/testing/arbitraries.ts';

const RUNS = { numRuns: 200 };

const u64 = fc.nat();
const s = fc.string({ maxLength: 8 });
const stateError = fc.oneof(
  fc.record({ code: fc.constant('revision_conflict' as const), expected: u64, actual: u64 }),
  fc.record({ code: fc.constant('parallel_merge_conflict' as const), key: s }),
  fc.record({ code: fc.constant('phase_run_loop_exceeded' as const), phase: fc.constantFrom('run_start', 'step_end' as const), maxRounds: u64 }),
  fc.record({ code: fc.constant('key_decode' as const), key: s, message: s }),
  fc.record({ code: fc.constant('tool_already_registered' as const), toolId: s }),
  fc.constant({ code: 'cancelled' as const }),
);

/** Every schema of the contract with an arbitrary of its canonical values. */
const cases: [string, z.ZodType, fc.Arbitrary<unknown>][] = [
  ['AgentEvent', AgentEventSchema, arb.agentEvent()],
  ['ToolResult', ToolResultSchema, arb.toolResult()],
  ['SuspendTicket', SuspendTicketSchema, arb.suspendTicket()],
  ['ToolCallResume', ToolCallResumeSchema, arb.toolCallResume()],
  ['ToolCall', ToolCallSchema, arb.toolCall()],
  ['ToolDescriptor', ToolDescriptorSchema, arb.toolDescriptor()],
  ['ToolCallOutcome', ToolCallOutcomeSchema, fc.constantFrom('succeeded', 'failed', 'suspended')],
  ['TokenUsage', TokenUsageSchema, arb.tokenUsage()],
  ['TerminationReason', TerminationReasonSchema, arb.terminationReason()],
  ['Message', MessageSchema, arb.message()],
  ['ContentBlock', ContentBlockSchema, arb.contentBlock()],
  ['AgentSpec', AgentSpecSchema, arb.agentSpec()],
  ['ContextWindowPolicy', ContextWindowPolicySchema, arb.agentSpec().map((a) => a.context_policy).filter((p) => p !== undefined)],
  ['InferenceOverride', InferenceOverrideSchema, arb.inferenceOverride()],
  ['ReasoningEffort', ReasoningEffortSchema, arb.reasoningEffort()],
  ['RunStatus', RunStatusSchema, fc.constantFrom('created', 'running', 'waiting', 'done')],
  ['ToolCallStatus', ToolCallStatusSchema, fc.constantFrom('new', 'running', 'suspended', 'resuming', 'succeeded', 'failed', 'cancelled')],
  ['Phase', PhaseSchema, fc.constantFrom(...PhaseSchema.options)],
  ['StateError', StateErrorSchema, stateError],
  ['ToolError', ToolErrorSchema, fc.record({ code: fc.constantFrom('invalid_arguments', 'execution_failed', 'denied', 'not_found', 'internal' as const), message: s })],
  ['BuildError', BuildErrorSchema, fc.oneof(fc.record({ code: fc.constant('state' as const), error: stateError }), fc.record({ code: fc.constant('validation_failed' as const), message: s }))],
  ['RuntimeError', RuntimeErrorSchema, fc.record({ code: fc.constant('thread_already_running' as const), threadId: s })],
  ['InferenceExecutionError', InferenceExecutionErrorSchema, fc.oneof(fc.constant({ code: 'cancelled' as const }), fc.record({ code: fc.constant('rate_limited' as const), message: s }))],
  ['StorageError', StorageErrorSchema, fc.record({ code: fc.constant('version_conflict' as const), expected: u64, actual: u64 })],
  ['ResolveError', ResolveErrorSchema, fc.record({ code: fc.constant('tool_id_conflict' as const), toolId: s, sourceA: s, sourceB: s })],
];

describe('canonical wire form of every contract schema', () => {
  it.each(cases)('%s: parse(serialise(x)) deep-equals x', (_name, schema, values) => {
    fc.assert(
      fc.property(values, (x) => {
        expect(fromWire(schema, toWire(schema, x))).toStrictEqual(structuredClone(x));
      }),
      RUNS,
    );
  });

  it.each(cases)('%s: serialise(parse(s)) === s for canonical s', (_name, schema, values) => {
    fc.assert(
      fc.property(values, (x) => {
        const canonical = toWire(schema, x);
        expect(toWire(schema, fromWire(schema, canonical))).toBe(canonical);
      }),
      RUNS,
    );
  });
});
