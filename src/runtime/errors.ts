import type { InferenceExecutionError, ToolError } from '../contract/errors.ts';

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
    default: {
      // A code from outside the types (a transcript or a record written elsewhere) is shown as it came.
      const unknown: never = e;
      const { code, message } = unknown as { readonly code: unknown; readonly message: unknown };
      return `${String(code)}: ${String(message)}`;
    }
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
    case 'unavailable_before_dispatch':
      return `Unavailable before dispatch: ${e.message}`;
    default: {
      // A code from outside the types (a transcript or a record written elsewhere) is shown as it came.
      const unknown: never = e;
      const { code, message } = unknown as { readonly code: unknown; readonly message: unknown };
      return `${String(code)}: ${String(message)}`;
    }
  }
}
