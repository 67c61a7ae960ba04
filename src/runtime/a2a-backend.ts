import type { RemoteEndpoint } from '../contract/agent-spec.ts';
import type { DelegateBackend } from './delegation.ts';
import type { Env } from './env.ts';

export function a2aBackend(endpoint: RemoteEndpoint, _env: Env): DelegateBackend {
  return { run: async () => ({ status: 'failed', message: `a2a ${endpoint.base_url}: not yet`, steps: 0 }) };
}
