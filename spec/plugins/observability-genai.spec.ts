import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ATTR_ERROR_TYPE, ATTR_SERVER_ADDRESS, ATTR_SERVER_PORT } from '@opentelemetry/semantic-conventions';
import {
  ATTR_GEN_AI_AGENT_DESCRIPTION,
  ATTR_GEN_AI_AGENT_ID,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_REQUEST_STREAM,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_ID,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_SYSTEM_INSTRUCTIONS,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_DESCRIPTION,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  GEN_AI_OPERATION_NAME_VALUE_CHAT,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
  GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
  GEN_AI_PROVIDER_NAME_VALUE_OPENAI,
} from '@opentelemetry/semantic-conventions/incubating';
import { SpanKind } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { MemoryThreadRunStore } from '../../src/runtime/thread-run-store.ts';
import { InMemorySink } from '../../src/plugins/observability/spans.ts';
import { repo } from '../support/serve-process.ts';
import { fedRun, SYSTEM } from './fed-run.ts';
import { ofKind, otel, runtimeOf } from './otel-support.ts';

/**
 * The observability plugin's OpenTelemetry spans by the GenAI semantic conventions
 * (docs/observability.md → Span attributes, Content capture; ADR 0047): the Required and
 * Conditionally Required attributes of `chat`, `execute_tool` and `invoke_agent`, named by the
 * constants of `@opentelemetry/semantic-conventions` so that a misspelt name fails; the doc's tables
 * against what a run exports; content only when asked for. (One trace per run across suspensions:
 * observability-trace.spec.ts.)
 */

/** The conventions' Required and Conditionally Required attributes of each span, as awaken sets them (the doc's level column). */
const REQUIRED: Readonly<Record<string, Readonly<Record<string, 'Required' | 'Conditionally Required'>>>> = {
  [GEN_AI_OPERATION_NAME_VALUE_CHAT]: {
    [ATTR_GEN_AI_OPERATION_NAME]: 'Required',
    [ATTR_GEN_AI_PROVIDER_NAME]: 'Required',
    [ATTR_GEN_AI_REQUEST_MODEL]: 'Conditionally Required',
    [ATTR_GEN_AI_REQUEST_STREAM]: 'Conditionally Required',
    [ATTR_GEN_AI_CONVERSATION_ID]: 'Conditionally Required',
    [ATTR_ERROR_TYPE]: 'Conditionally Required',
    [ATTR_SERVER_PORT]: 'Conditionally Required',
  },
  [GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL]: {
    [ATTR_GEN_AI_OPERATION_NAME]: 'Required',
    [ATTR_GEN_AI_TOOL_NAME]: 'Required',
    [ATTR_ERROR_TYPE]: 'Conditionally Required',
  },
  [GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT]: {
    [ATTR_GEN_AI_OPERATION_NAME]: 'Required',
    [ATTR_GEN_AI_PROVIDER_NAME]: 'Required',
    [ATTR_GEN_AI_AGENT_ID]: 'Conditionally Required',
    [ATTR_GEN_AI_AGENT_NAME]: 'Conditionally Required',
    [ATTR_GEN_AI_AGENT_DESCRIPTION]: 'Conditionally Required',
    [ATTR_GEN_AI_CONVERSATION_ID]: 'Conditionally Required',
    [ATTR_GEN_AI_REQUEST_MODEL]: 'Conditionally Required',
    [ATTR_ERROR_TYPE]: 'Conditionally Required',
  },
};

/** The attribute tables of docs/observability.md → Span attributes, by the operation their heading names: attribute → level. */
function docTables(): Map<string, Map<string, string>> {
  const doc = readFileSync(join(repo, 'docs/observability.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### Span attributes'), doc.indexOf('### Content capture'));
  const tables = new Map<string, Map<string, string>>();
  let current: Map<string, string> | undefined;
  for (const line of section.split('\n')) {
    const heading = /^`(chat|execute_tool|invoke_agent) \{\w+\}`, kind (CLIENT|INTERNAL)/.exec(line);
    if (heading !== null) tables.set(heading[1] as string, (current = new Map()));
    const row = /^\| `([a-z_.]+)` \| ([A-Za-z -]+) \|/.exec(line);
    if (row !== null && current !== undefined) current.set(row[1] as string, (row[2] as string).trim());
  }
  return tables;
}

describe('GenAI semantic conventions: chat, execute_tool, invoke_agent', () => {
  it('every Required and Conditionally Required attribute that applies is exported, with the conventions’ values', () => {
    const { exporter, sink } = otel();
    fedRun(sink);
    const spans = exporter.getFinishedSpans();
    const [chat, failed] = ofKind(spans, GEN_AI_OPERATION_NAME_VALUE_CHAT);
    expect(chat?.name).toBe('chat gpt-4o');
    expect(chat?.kind).toBe(SpanKind.CLIENT);
    expect(chat?.attributes).toMatchObject({
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_CHAT,
      [ATTR_GEN_AI_PROVIDER_NAME]: GEN_AI_PROVIDER_NAME_VALUE_OPENAI,
      [ATTR_GEN_AI_REQUEST_MODEL]: 'gpt-4o',
      [ATTR_GEN_AI_REQUEST_STREAM]: true,
      [ATTR_GEN_AI_CONVERSATION_ID]: 'thread-9',
      [ATTR_SERVER_ADDRESS]: 'api.openai.com',
      [ATTR_SERVER_PORT]: 443,
      [ATTR_GEN_AI_RESPONSE_MODEL]: 'gpt-4o-2024-08-06',
      [ATTR_GEN_AI_RESPONSE_ID]: 'chatcmpl-1',
      [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: ['tool_use'],
    });
    expect(chat?.attributes[ATTR_ERROR_TYPE]).toBeUndefined();
    // A failed inference: error.type, and no finish reason made up from the empty result's stop reason.
    expect(failed?.attributes[ATTR_ERROR_TYPE]).toBe('rate_limited');
    // It failed before the provider said its name: named as its earlier answer was.
    expect(failed?.attributes[ATTR_GEN_AI_PROVIDER_NAME]).toBe(GEN_AI_PROVIDER_NAME_VALUE_OPENAI);
    expect(failed?.attributes).not.toHaveProperty(ATTR_GEN_AI_RESPONSE_FINISH_REASONS);
    expect(failed?.attributes).not.toHaveProperty(ATTR_GEN_AI_RESPONSE_MODEL);
    expect(failed?.attributes).not.toHaveProperty(ATTR_SERVER_ADDRESS);

    const [lookup, book] = ofKind(spans, GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL);
    expect(lookup?.name).toBe('execute_tool lookup');
    expect(lookup?.attributes).toMatchObject({
      [ATTR_GEN_AI_TOOL_NAME]: 'lookup',
      [ATTR_GEN_AI_TOOL_CALL_ID]: 'c1',
      [ATTR_GEN_AI_TOOL_TYPE]: 'function',
      [ATTR_GEN_AI_TOOL_DESCRIPTION]: 'Looks a city up',
    });
    expect(lookup?.attributes).not.toHaveProperty(ATTR_ERROR_TYPE);
    expect(book?.attributes).toMatchObject({ [ATTR_GEN_AI_TOOL_DESCRIPTION]: 'Books a room', [ATTR_ERROR_TYPE]: 'tool_error' });

    const [agent] = ofKind(spans, GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT);
    expect(agent?.name).toBe('invoke_agent planner');
    expect(agent?.attributes).toMatchObject({
      [ATTR_GEN_AI_PROVIDER_NAME]: GEN_AI_PROVIDER_NAME_VALUE_OPENAI,
      [ATTR_GEN_AI_AGENT_ID]: 'planner',
      [ATTR_GEN_AI_AGENT_NAME]: 'planner',
      [ATTR_GEN_AI_AGENT_DESCRIPTION]: 'Plans trips',
      [ATTR_GEN_AI_CONVERSATION_ID]: 'thread-9',
      [ATTR_GEN_AI_REQUEST_MODEL]: 'gpt-4o',
      [ATTR_ERROR_TYPE]: 'run_error',
    });
    // Every Required and Conditionally Required attribute of each kind is on it (this run gives each a reason).
    for (const [op, required] of Object.entries(REQUIRED)) {
      const exported = new Set(ofKind(spans, op).flatMap((s) => Object.keys(s.attributes)));
      expect(
        [...Object.keys(required)].filter((name) => !exported.has(name)),
        op,
      ).toEqual([]);
    }
  });

  it('without a well-known name the provider is the registry id; without a response model none is reported (scripted model)', async () => {
    const { exporter, sink } = otel();
    const { runtime } = runtimeOf([{ text: 'fine', usage: { prompt_tokens: 3, completion_tokens: 1 } }], sink, new MemoryThreadRunStore(), deterministicEnv());
    const r = await runtime.run({ messages: [Messages.user('hi')] }, new VecEventSink());
    expect(r.ok).toBe(true);
    const [chat] = ofKind(exporter.getFinishedSpans(), GEN_AI_OPERATION_NAME_VALUE_CHAT);
    const [agent] = ofKind(exporter.getFinishedSpans(), GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT);
    expect(chat?.attributes[ATTR_GEN_AI_PROVIDER_NAME]).toBe('scripted');
    expect(chat?.attributes[ATTR_GEN_AI_REQUEST_MODEL]).toBe('scripted-model');
    expect(chat?.attributes).not.toHaveProperty(ATTR_GEN_AI_RESPONSE_MODEL);
    expect(agent?.attributes).toMatchObject({
      [ATTR_GEN_AI_PROVIDER_NAME]: 'scripted',
      [ATTR_GEN_AI_REQUEST_MODEL]: 'scripted-model',
      [ATTR_GEN_AI_AGENT_NAME]: 'agent',
    });
    expect(agent?.attributes).not.toHaveProperty(ATTR_GEN_AI_AGENT_DESCRIPTION);
  });

  it('docs/observability.md: each table lists exactly the attributes its kind of span exports, with the conventions’ levels', () => {
    const { exporter, sink } = otel({ captureContent: true });
    fedRun(sink);
    const spans = exporter.getFinishedSpans();
    const tables = docTables();
    expect([...tables.keys()]).toEqual([GEN_AI_OPERATION_NAME_VALUE_CHAT, GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL, GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT]);
    for (const [op, table] of tables) {
      const exported = [...new Set(ofKind(spans, op).flatMap((s) => Object.keys(s.attributes)))].sort();
      // awaken.segment_index and the rest: the whole set, both ways.
      expect([...table.keys()].sort(), op).toEqual(exported);
      for (const [name, level] of Object.entries(REQUIRED[op] ?? {})) expect(table.get(name), `${op} ${name}`).toBe(level);
      for (const [name, level] of table)
        if (level === 'Required' || level === 'Conditionally Required') expect(REQUIRED[op]?.[name], `${op} ${name}`).toBe(level);
    }
  });
});

describe('content capture (opt-in)', () => {
  it('captureContent: input, output and system instructions as JSON in the conventions’ message shape', () => {
    const { exporter, sink } = otel({ captureContent: true });
    fedRun(sink);
    const [chat, failed] = ofKind(exporter.getFinishedSpans(), GEN_AI_OPERATION_NAME_VALUE_CHAT);
    const json = (v: unknown): unknown => JSON.parse(String(v));
    expect(json(chat?.attributes[ATTR_GEN_AI_SYSTEM_INSTRUCTIONS])).toEqual([{ type: 'text', content: SYSTEM }]);
    expect(json(chat?.attributes[ATTR_GEN_AI_INPUT_MESSAGES])).toEqual([{ role: 'user', parts: [{ type: 'text', content: 'Two nights in Lyon' }] }]);
    expect(json(chat?.attributes[ATTR_GEN_AI_OUTPUT_MESSAGES])).toEqual([
      {
        role: 'assistant',
        parts: [
          { type: 'reasoning', content: 'Lyon first.' },
          { type: 'text', content: 'Looking.' },
          { type: 'tool_call', id: 'c1', name: 'lookup', arguments: { city: 'Lyon' } },
          { type: 'tool_call', id: 'c2', name: 'book', arguments: { nights: 2 } },
        ],
        finish_reason: 'tool_use',
      },
    ]);
    // The second inference was sent the history as it was then: the calls and their results.
    expect(json(failed?.attributes[ATTR_GEN_AI_INPUT_MESSAGES])).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'Two nights in Lyon' }] },
      {
        role: 'assistant',
        parts: [
          { type: 'text', content: 'Looking.' },
          { type: 'tool_call', id: 'c1', name: 'lookup', arguments: { city: 'Lyon' } },
          { type: 'tool_call', id: 'c2', name: 'book', arguments: { nights: 2 } },
        ],
      },
      { role: 'tool', parts: [{ type: 'tool_call_response', id: 'c1', response: '{"city":"Lyon"}' }] },
      { role: 'tool', parts: [{ type: 'tool_call_response', id: 'c2', response: 'no rooms' }] },
    ]);
    // It failed: nothing answered.
    expect(failed?.attributes).not.toHaveProperty(ATTR_GEN_AI_OUTPUT_MESSAGES);
  });

  it('off by default: no content attribute, and the plugin copies no content for the sink', () => {
    const { exporter, sink } = otel();
    fedRun(sink);
    for (const s of exporter.getFinishedSpans()) {
      const content: readonly string[] = [ATTR_GEN_AI_INPUT_MESSAGES, ATTR_GEN_AI_OUTPUT_MESSAGES, ATTR_GEN_AI_SYSTEM_INSTRUCTIONS];
      expect(
        Object.keys(s.attributes).filter((k) => content.includes(k)),
        s.name,
      ).toEqual([]);
    }
    const quiet = new InMemorySink();
    fedRun(quiet);
    expect(quiet.metrics().inferences.map((s) => s.content)).toEqual([undefined, undefined]);
    const asking = new InMemorySink({ captureContent: true });
    fedRun(asking);
    expect(asking.metrics().inferences.map((s) => s.content?.system_instructions)).toEqual([
      [{ type: 'text', content: SYSTEM }],
      [{ type: 'text', content: SYSTEM }],
    ]);
  });
});
