import { AgentCard } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import { newAgentSpec } from '../../src/contract/agent-spec.ts';
import { agentCardOf } from '../../src/protocols/a2a/card.ts';

describe('A2A agent card from an AgentSpec, judged by @a2a-js/sdk', () => {
  const spec = newAgentSpec('weather', { system_prompt: 'You answer questions about the weather.' });

  it('round-trips through the SDK codec unchanged (canonical 1.0 JSON)', () => {
    const card = agentCardOf(spec, 'http://127.0.0.1:3000/', '0.1.0');
    expect(AgentCard.toJSON(AgentCard.fromJSON(card))).toEqual(card);
    expect(card['supportedInterfaces']).toEqual([
      { url: 'http://127.0.0.1:3000/v1/a2a/weather', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
      { url: 'http://127.0.0.1:3000/v1/a2a/weather/jsonrpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ]);
    expect(card['description']).toBe('You answer questions about the weather.');
  });

  it('the official client factory builds an HTTP+JSON client from it', async () => {
    const card = agentCardOf(spec, 'http://127.0.0.1:3000', '0.1.0');
    const client = await new ClientFactory().createFromAgentCard(AgentCard.fromJSON(card));
    expect(client.transport.constructor.name).toMatch(/Rest/);
    expect(AgentCard.toJSON(await client.getAgentCard())).toEqual(card);
  });

  it('a client that prefers JSON-RPC gets the JSON-RPC interface', async () => {
    const card = agentCardOf(spec, 'http://127.0.0.1:3000', '0.1.0');
    const client = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: ['JSONRPC'] }),
    ).createFromAgentCard(AgentCard.fromJSON(card));
    expect(client.transport.constructor.name).toMatch(/JsonRpc/);
  });

  it('describes an agent without a prompt by its id, and cuts a long prompt on a character boundary', () => {
    expect(agentCardOf(newAgentSpec('bare'), 'http://h', '1')['description']).toBe("Awaken agent 'bare'");
    const long = agentCardOf(newAgentSpec('long', { system_prompt: 'é'.repeat(150) }), 'http://h', '1')['description'] as string;
    expect(long).toBe(`${'é'.repeat(100)}…`);
    expect(long).not.toContain('\uFFFD');
  });
});
