import type { AgentSpec } from '../../contract/agent-spec.ts';
import type { JsonValue } from '../../contract/json.ts';

/** How many bytes of the system prompt an agent card's description keeps. */
const DESCRIPTION_BYTES = 200;

/** An agent's description: its system prompt, cut to 200 bytes on a character boundary, or its id. */
export function describeAgent(spec: AgentSpec): string {
  const prompt = spec.system_prompt.trim();
  if (prompt === '') return `Awaken agent '${spec.id}'`;
  const bytes = Buffer.from(prompt, 'utf8');
  if (bytes.length <= DESCRIPTION_BYTES) return prompt;
  // Cut on a character boundary: decoding a split code point would leave U+FFFD behind.
  let end = DESCRIPTION_BYTES;
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  return `${bytes.subarray(0, end).toString('utf8')}…`;
}

/**
 * The A2A 1.0 agent card of an agent, served at `/.well-known/agent-card.json`: two interfaces,
 * HTTP+JSON at `<baseUrl>/v1/a2a/<agent id>` and JSON-RPC at `<baseUrl>/v1/a2a/<agent id>/jsonrpc`,
 * streaming on, text in and out, one skill for the agent. Canonical proto3 JSON (no default
 * values), so the SDK's codec round-trips it unchanged.
 */
export function agentCardOf(spec: AgentSpec, baseUrl: string, version: string): { readonly [key: string]: JsonValue } {
  const base = baseUrl.replace(/\/+$/, '');
  return {
    name: spec.id,
    description: describeAgent(spec),
    supportedInterfaces: [
      { url: `${base}/v1/a2a/${encodeURIComponent(spec.id)}`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
      { url: `${base}/v1/a2a/${encodeURIComponent(spec.id)}/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ],
    provider: { url: base, organization: 'Awaken' },
    version,
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: spec.id,
        name: spec.id,
        description: `Interact with the '${spec.id}' Awaken agent.`,
        tags: ['awaken', 'agent'],
        inputModes: ['text/plain', 'application/json'],
        outputModes: ['text/plain'],
      },
    ],
  };
}
