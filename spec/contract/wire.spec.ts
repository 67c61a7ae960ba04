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
  UnknownKeyPolicySchema,
} from '../../src/contract/errors.ts';
import { fromSchema } from '../support/from-schema.ts';
import { SuspendTicketSchema, ToolCallOutcomeSchema, ToolCallResumeSchema, ToolDescriptorSchema, ToolResultSchema } from '../../src/contract/tool.ts';
import { TokenUsageSchema } from '../../src/contract/usage.ts';
import { fromWire, toWire } from '../../src/contract/wire.ts';
import * as arb from '../../src/testing/arbitraries.ts';

const RUNS = { numRuns: 200 };

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
  [
    'ContextWindowPolicy',
    ContextWindowPolicySchema,
    arb
      .agentSpec()
      .map((a) => a.context_policy)
      .filter((p) => p !== undefined),
  ],
  ['InferenceOverride', InferenceOverrideSchema, arb.inferenceOverride()],
  ['ReasoningEffort', ReasoningEffortSchema, arb.reasoningEffort()],
  ['RunStatus', RunStatusSchema, fc.constantFrom('created', 'running', 'waiting', 'done')],
  ['ToolCallStatus', ToolCallStatusSchema, fc.constantFrom('new', 'running', 'suspended', 'resuming', 'succeeded', 'failed', 'cancelled')],
  ['Phase', PhaseSchema, fc.constantFrom(...PhaseSchema.options)],
  ['StateError', StateErrorSchema, fromSchema(StateErrorSchema)],
  ['ToolError', ToolErrorSchema, fromSchema(ToolErrorSchema)],
  ['BuildError', BuildErrorSchema, fromSchema(BuildErrorSchema)],
  ['RuntimeError', RuntimeErrorSchema, fromSchema(RuntimeErrorSchema)],
  ['InferenceExecutionError', InferenceExecutionErrorSchema, fromSchema(InferenceExecutionErrorSchema)],
  ['StorageError', StorageErrorSchema, fromSchema(StorageErrorSchema)],
  ['ResolveError', ResolveErrorSchema, fromSchema(ResolveErrorSchema)],
  ['UnknownKeyPolicy', UnknownKeyPolicySchema, fromSchema(UnknownKeyPolicySchema)],
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
