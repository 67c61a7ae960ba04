import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { connectMcp, mcpToolId, McpToolRegistryManager, type McpToolSource } from '../../src/plugins/mcp-tools.ts';
import { harness } from '../support/runtime.ts';

const repo = resolve(import.meta.dirname, '../..');
const opened: McpToolSource[] = [];
afterAll(async () => {
  for (const s of opened) await s.close();
});
const open = async (...args: Parameters<typeof connectMcp>) => {
  const s = await connectMcp(...args);
  opened.push(s);
  return s;
};
const doneOf = (events: readonly AgentEvent[]) =>
  events.filter((e) => e.event_type === 'tool_call_done') as Extract<AgentEvent, { event_type: 'tool_call_done' }>[];

describe('MCP tools as runtime tools (book: 使用 MCP Tools)', () => {
  it('tool ids are mcp__<server>__<tool>, each part cleaned as 0.6’s to_tool_id does (its vectors)', () => {
    expect(mcpToolId('my_server', 'my_tool')).toBe('mcp__my_server__my_tool');
    expect(mcpToolId('my-server', 'my.tool')).toBe('mcp__my_server__my_tool');
    expect(mcpToolId('a--b', 'c..d')).toBe('mcp__a_b__c_d');
    expect(mcpToolId('-server-', '-tool-')).toBe('mcp__server__tool');
    expect(mcpToolId('srv', '---')).toBeUndefined();
    expect(mcpToolId('s', 'x'.repeat(100))).toHaveLength(64);
  });

  it('over stdio, against the SDK’s own McpServer: tools as <server>__<tool>, results with their metadata, progress forwarded, errors as tool errors', async () => {
    const calc = await open('calc', { command: process.execPath, args: [join(repo, 'spec/plugins/fixtures/mcp-calc-server.mjs')], cwd: repo });
    expect(calc.tools.map((t) => t.descriptor.id)).toEqual([
      'mcp__calc__add',
      'mcp__calc__countdown',
      'mcp__calc__broken',
      'mcp__calc__grow',
      'mcp__calc__crash',
      'mcp__calc__pid',
    ]);
    expect(calc.tools[0]?.descriptor.parameters).toMatchObject({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } });
    const call = (id: string, name: string, args: object) => ({ tool_calls: [{ id, name, arguments: args }] });
    const h = harness(
      [call('c1', 'mcp__calc__add', { a: 2, b: 3 }), call('c2', 'mcp__calc__countdown', { from: 3 }), call('c3', 'mcp__calc__broken', {}), { text: 'done' }],
      { tools: calc.tools },
    );
    const r = await h.runtime.run({ messages: [Messages.user('compute')] }, h.sink);
    expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
    const done = doneOf(h.sink.events);
    expect(done[0]?.result).toMatchObject({
      status: 'success',
      data: { text: '5', structured: { sum: 5 } },
      metadata: { mcp: { server: 'calc', tool: 'add' } },
    });
    expect(done[1]?.result).toMatchObject({ status: 'success', data: { text: 'lift-off' } });
    expect(done[2]?.result).toMatchObject({ status: 'error', message: 'it broke', metadata: { mcp: { server: 'calc', tool: 'broken' } } });
    const progress = h.sink.events.filter((e) => e.event_type === 'activity_snapshot' && e.activity_type === 'tool-call-progress' && e.message_id === 'c2');
    expect(progress.map((e) => (e as { content: { message?: string } }).content.message)).toEqual(['tick 1', 'tick 2', 'tick 3']);
    expect((await calc.refresh()).map((t) => t.descriptor.id)).toEqual([
      'mcp__calc__add',
      'mcp__calc__countdown',
      'mcp__calc__broken',
      'mcp__calc__grow',
      'mcp__calc__crash',
      'mcp__calc__pid',
    ]);
  });

  it('awaken mcp itself, over stdio: the agent is a tool, its run the call', async () => {
    const awaken = await open(
      'awaken',
      { command: process.execPath, args: [join(repo, 'src/cli/awaken.js'), 'mcp', '--model', 'scripted:spec/cli/fixtures/weather-paced.yaml'], cwd: repo },
      { timeoutMs: 20_000 },
    );
    expect(awaken.tools.map((t) => t.descriptor.id)).toEqual(['mcp__awaken__demo']);
    const h = harness([{ tool_calls: [{ id: 'd1', name: 'mcp__awaken__demo', arguments: { message: 'weather in Tokyo?' } }] }, { text: 'relayed' }], {
      tools: awaken.tools,
    });
    await h.runtime.run({ messages: [Messages.user('ask the other agent')] }, h.sink);
    const done = doneOf(h.sink.events)[0];
    expect(done?.result).toMatchObject({ status: 'success', data: { text: 'It is cloudy in Tokyo.' }, metadata: { mcp: { server: 'awaken', tool: 'demo' } } });
    const progress = h.sink.events.filter((e) => e.event_type === 'activity_snapshot' && e.activity_type === 'tool-call-progress');
    expect(progress.length).toBeGreaterThan(0);
  }, 30_000);

  it('a server that never answers is given up on within the timeout; a command that is not there fails', async () => {
    const started = Date.now();
    await expect(connectMcp('mute', { command: process.execPath, args: ['-e', 'setInterval(() => {}, 1000)'] }, { timeoutMs: 500 })).rejects.toThrow(
      /MCP server mute did not answer within 500 ms/,
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    await expect(connectMcp('none', { command: join(repo, 'no-such-command') }, { timeoutMs: 2_000 })).rejects.toThrow();
  });

  const calcServer = { command: process.execPath, args: [join(repo, 'spec/plugins/fixtures/mcp-calc-server.mjs')], cwd: repo };
  const ctx = () => ({ signal: new AbortController().signal, reportProgress: async () => undefined }) as never;
  const byId = (s: McpToolSource, id: string) => s.tools.find((t) => t.descriptor.id === id) as McpToolSource['tools'][number];

  it('a server that adds a tool says so, and the tools are listed again (onToolsChanged hears of it)', async () => {
    const changes: string[][] = [];
    const calc = await open('calc', calcServer, { onToolsChanged: (tools) => changes.push(tools.map((t) => t.descriptor.id)) });
    await byId(calc, 'mcp__calc__grow').execute({}, ctx());
    await expect.poll(() => calc.tools.map((t) => t.descriptor.id), { timeout: 5000 }).toContain('mcp__calc__extra');
    expect(changes.at(-1)).toContain('mcp__calc__extra');
    expect(await byId(calc, 'mcp__calc__extra').execute({}, ctx())).toMatchObject({ status: 'success', data: { text: 'extra here' } });
  });

  it('a server process that dies: the call under way fails, the next call connects again (a new process) and works', async () => {
    const calc = await open('calc', calcServer);
    const pid = ((await byId(calc, 'mcp__calc__pid').execute({}, ctx())) as unknown as { data: { text: string } }).data.text;
    await expect(Promise.resolve(byId(calc, 'mcp__calc__crash').execute({}, ctx()))).rejects.toThrow(/^Execution failed: MCP server calc: /);
    const again = (await byId(calc, 'mcp__calc__pid').execute({}, ctx())) as unknown as { status: string; data: { text: string } };
    expect(again.status).toBe('success');
    expect(again.data.text).not.toBe(pid);
    expect(await byId(calc, 'mcp__calc__add').execute({ a: 1, b: 2 }, ctx())).toMatchObject({ data: { text: '3' } });
  });

  it('refreshMs lists the tools again on a timer; close stops it', async () => {
    const listings = vi.spyOn(Client.prototype, 'listTools');
    try {
      const calc = await open('calc', calcServer, { refreshMs: 40 });
      const atStart = listings.mock.calls.length;
      await expect.poll(() => listings.mock.calls.length - atStart, { timeout: 5000 }).toBeGreaterThanOrEqual(3);
      await calc.close();
      const atClose = listings.mock.calls.length;
      await new Promise((r) => setTimeout(r, 200));
      expect(listings.mock.calls.length).toBe(atClose);
    } finally {
      listings.mockRestore();
    }
  });

  it('McpToolRegistryManager (book): several servers in one registry, ids and snapshot for the builder, a periodic refresh', async () => {
    const manager = await McpToolRegistryManager.connect({ one: calcServer, two: calcServer });
    try {
      expect(manager.ids().filter((id) => id.endsWith('__add'))).toEqual(['mcp__one__add', 'mcp__two__add']);
      expect(manager.snapshot().map(([id]) => id)).toEqual(manager.ids());
      const listings = vi.spyOn(Client.prototype, 'listTools');
      try {
        manager.startPeriodicRefresh(40);
        await expect.poll(() => listings.mock.calls.length, { timeout: 5000 }).toBeGreaterThanOrEqual(4);
      } finally {
        listings.mockRestore();
      }
    } finally {
      await manager.close();
    }
    await expect(McpToolRegistryManager.connect({ ok: calcServer, ghost: { command: '/nonexistent/mcp-server' } })).rejects.toThrow(/^MCP server ghost: /);
  });
});
