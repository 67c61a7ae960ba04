import type { AgentEvent } from '../contract/event.ts';
import { unreachable } from '../contract/never.ts';

/**
 * The stream invariants every run must keep (checked by the spec on every run and usable on any
 * captured stream): it starts with `run_start`; every `run_start` is closed by exactly one
 * `run_finish`, and nothing but a new `run_start` follows a `run_finish`; the final `run_finish`
 * ends the stream; every `step_start` has its `step_end` before the next step or the finish; every
 * `tool_call_start` has its `tool_call_done` before its step ends. Returns the violations found.
 */
export function checkRunInvariants(events: readonly AgentEvent[]): string[] {
  const out: string[] = [];
  if (events.length === 0) return ['empty stream'];
  if (events[0]?.event_type !== 'run_start') out.push(`stream starts with ${events[0]?.event_type}`);
  if (events[events.length - 1]?.event_type !== 'run_finish') out.push(`stream ends with ${events[events.length - 1]?.event_type}`);
  let inRun = false;
  let inStep = false;
  const openCalls = new Set<string>();
  events.forEach((e, i) => {
    const at = `#${i} ${e.event_type}`;
    if (!inRun && e.event_type !== 'run_start' && e.event_type !== 'run_finish' && e.event_type !== 'step_start') {
      out.push(`${at}: event outside a run`);
    }
    switch (e.event_type) {
      case 'run_start':
        if (inRun) out.push(`${at}: run_start inside an open run`);
        inRun = true;
        break;
      case 'run_finish':
        if (!inRun) out.push(`${at}: run_finish without run_start`);
        if (inStep) out.push(`${at}: run_finish inside an open step`);
        inRun = false;
        inStep = false;
        break;
      case 'step_start':
        if (!inRun) out.push(`${at}: step outside a run`);
        if (inStep) out.push(`${at}: step_start before the previous step_end`);
        inStep = true;
        break;
      case 'step_end':
        if (!inStep) out.push(`${at}: step_end without step_start`);
        if (openCalls.size > 0) out.push(`${at}: step ends with open tool calls ${[...openCalls].join(',')}`);
        openCalls.clear();
        inStep = false;
        break;
      case 'tool_call_start':
        openCalls.add(e.id);
        break;
      case 'tool_call_done':
        openCalls.delete(e.id);
        break;
      case 'error':
      case 'text_delta':
      case 'reasoning_delta':
      case 'tool_call_delta':
      case 'tool_call_ready':
      case 'tool_call_stream_delta':
      case 'reasoning_encrypted_value':
      case 'messages_snapshot':
      case 'activity_snapshot':
      case 'activity_delta':
      case 'tool_call_resumed':
      case 'inference_complete':
      case 'state_snapshot':
      case 'state_delta':
        break;
      default:
        unreachable(e);
    }
  });
  return out;
}
