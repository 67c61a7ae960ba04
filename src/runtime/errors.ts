import type { InferenceExecutionError, ToolError } from '../contract/errors.ts';
import { unreachable } from '../contract/never.ts';

export function describeInferenceError(e: InferenceExecutionError): string {
  switch (e.code) {
    case 'provider':
      return `provider error: ${e.message}`;
    case 'rate_limited':
      return `rate limited: ${e.message}`;
    case 'timeout':
      return `timeout: ${e.message}`;
    case 'cancelled':
      return 'cancelled';
    default:
      return unreachable(e);
  }
}

/** 0.6 display strings of `ToolError` (core-spec §4.1). */
export function describeToolError(e: ToolError): string {
  switch (e.code) {
    case 'invalid_arguments':
      return `Invalid arguments: ${e.message}`;
    case 'execution_failed':
      return `Execution failed: ${e.message}`;
    case 'denied':
      return `Denied: ${e.message}`;
    case 'not_found':
      return `Not found: ${e.message}`;
    case 'internal':
      return `Internal error: ${e.message}`;
    default:
      return unreachable(e);
  }
}
