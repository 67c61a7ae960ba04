import { EventEncoder } from '@ag-ui/encoder';
import { JsonToSseTransformStream, type UIMessageChunk } from 'ai';
import type { AgentEvent } from '../src/contract/event.ts';
import { StreamResponse } from '@a2a-js/sdk';
import { encodeA2a, frameA2a } from '../src/protocols/a2a/encoder.ts';
import { encodeAcp, frameAcp } from '../src/protocols/acp/encoder.ts';
import { encodeAgUi, frameAgUi } from '../src/protocols/ag-ui/encoder.ts';
import { encodeAiSdk, frameAiSdk } from '../src/protocols/ai-sdk-v6/encoder.ts';
import { encodeMcp, frameMcp } from '../src/protocols/mcp/encoder.ts';
import type { Suite } from './harness.ts';

/** A 10k-event stream: 100 steps of text deltas and one tool call each. */
function stream(): AgentEvent[] {
  const events: AgentEvent[] = [{ event_type: 'run_start', thread_id: 't', run_id: 'r' }];
  for (let s = 0; events.length < 10_000; s++) {
    events.push({ event_type: 'step_start', message_id: `m${s}` });
    for (let i = 0; i < 90; i++) events.push({ event_type: 'text_delta', delta: `word${i} ` });
    events.push({ event_type: 'tool_call_start', id: `c${s}`, name: 'echo' });
    events.push({ event_type: 'tool_call_delta', id: `c${s}`, args_delta: '{"text":"x"}' });
    events.push({ event_type: 'tool_call_ready', id: `c${s}`, name: 'echo', arguments: { text: 'x' } });
    events.push({
      event_type: 'tool_call_done',
      id: `c${s}`,
      message_id: `m${s}`,
      result: { tool_name: 'echo', status: 'success', data: { echoed: 'x' }, message: null },
      outcome: 'succeeded',
    });
    events.push({ event_type: 'step_end' });
  }
  events.push({ event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'natural_end' } });
  return events;
}

/** Our transcoders + framing beside each protocol's official SSE framing of the same output. */
export function encoderSuites(): Suite[] {
  const events = stream();
  const chunks = encodeAiSdk(events) as unknown as UIMessageChunk[];
  const agUi = encodeAgUi(events);
  const official = new EventEncoder();
  const mcp = encodeMcp(events);
  const acp = encodeAcp(events);
  const a2a = encodeA2a(events);
  const a2aDecoded = a2a.map((f) => StreamResponse.fromJSON(f));
  return [
    {
      name: 'encode-ai-sdk-v6-10k',
      description: `AI SDK v6: ${events.length} events → ${chunks.length} chunks → SSE, beside ai's JsonToSseTransformStream framing the same chunks`,
      units: { name: 'event', count: events.length },
      cases: [
        { name: 'awaken transcode + frame', role: 'subject', fn: () => frameAiSdk(encodeAiSdk(events)) },
        {
          name: 'ai JsonToSseTransformStream',
          role: 'baseline',
          fn: async () => {
            const source = new ReadableStream<UIMessageChunk>({
              start: (c) => {
                for (const x of chunks) c.enqueue(x);
                c.close();
              },
            });
            const reader = source.pipeThrough(new JsonToSseTransformStream()).getReader();
            let n = 0;
            for (;;) {
              const { done, value } = await reader.read();
              if (done) break;
              n += value.length;
            }
            return n;
          },
        },
      ],
    },
    {
      name: 'encode-ag-ui-10k',
      description: `AG-UI: ${events.length} events → ${agUi.length} AG-UI events → SSE, beside @ag-ui/encoder EventEncoder.encodeSSE framing the same events`,
      units: { name: 'event', count: events.length },
      cases: [
        { name: 'awaken transcode + frame', role: 'subject', fn: () => frameAgUi(encodeAgUi(events)) },
        { name: 'awaken frame only', role: 'subject', fn: () => frameAgUi(agUi) },
        {
          name: '@ag-ui/encoder encodeSSE',
          role: 'baseline',
          fn: () => {
            let out = '';
            for (const e of agUi) out += official.encodeSSE(e as never);
            return out;
          },
        },
      ],
    },
    {
      name: 'encode-mcp-10k',
      description: `MCP: ${events.length} events → ${mcp.progress.length} progress notifications + 1 result → NDJSON, beside a hand-written floor (JSON.stringify of the same messages; the SDK has no standalone encoder)`,
      units: { name: 'event', count: events.length },
      cases: [
        { name: 'awaken transcode + frame', role: 'subject', fn: () => frameMcp(encodeMcp(events)) },
        {
          name: 'floor: stringify the messages',
          role: 'baseline',
          fn: () => {
            let out = '';
            for (const p of mcp.progress)
              out += `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, ...p } })}\n`;
            return `${out}${JSON.stringify({ jsonrpc: '2.0', id: 1, result: mcp.result })}\n`;
          },
        },
      ],
    },
    {
      name: 'encode-acp-10k',
      description: `ACP: ${events.length} events → session/update notifications + 1 response → NDJSON, beside the same framing of pre-transcoded messages (the SDK has no standalone encoder)`,
      units: { name: 'event', count: events.length },
      cases: [
        { name: 'awaken transcode + frame', role: 'subject', fn: () => frameAcp(encodeAcp(events)) },
        { name: 'floor: frame the messages', role: 'baseline', fn: () => frameAcp(acp) },
      ],
    },
    {
      name: 'encode-a2a-10k',
      description: `A2A: ${events.length} events → ${a2a.length} StreamResponse frames → SSE, beside @a2a-js/sdk StreamResponse.toJSON + the same SSE framing of the decoded frames`,
      units: { name: 'event', count: events.length },
      cases: [
        { name: 'awaken transcode + frame', role: 'subject', fn: () => frameA2a(encodeA2a(events)) },
        {
          name: '@a2a-js/sdk StreamResponse.toJSON',
          role: 'baseline',
          fn: () => {
            let out = '';
            for (const f of a2aDecoded) out += `data: ${JSON.stringify(StreamResponse.toJSON(f))}\n\n`;
            return out;
          },
        },
      ],
    },
  ];
}
