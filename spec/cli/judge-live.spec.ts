import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentCard, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, JsonRpcTransportHandler, ServerCallContext, type AgentExecutor } from '@a2a-js/sdk/server';
import { EventType, type BaseEvent } from '@ag-ui/core';
import { EventEncoder } from '@ag-ui/encoder';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createUIMessageStream, pipeUIMessageStreamToResponse, type UIMessageChunk } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { main } from '../../src/cli/main.ts';
import type { JudgeReport } from '../../src/protocols/findings.ts';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * `awaken judge --url` and `--command`: each protocol's official client holds a conversation with a
 * live server over a real socket (or an agent process over stdio), records the bodies and judges
 * them — against a real `awaken serve` process, and against foreign servers written with each
 * protocol's own server-side helper (`ai`'s `createUIMessageStream`, `@ag-ui/encoder`, the A2A SDK's
 * `DefaultRequestHandler` over its JSON-RPC transport, the MCP SDK's `McpServer`, an agent made with
 * the ACP SDK), correct and broken.
 */

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (t) => (out += t), err: (t) => (err += t) }, () => Promise.resolve(''));
  return { code, out, err };
}

async function judge(argv: string[]): Promise<{ code: number; report: JudgeReport; err: string }> {
  const r = await cli(['judge', '--json', ...argv]);
  if (r.out === '') throw new Error(`no report (exit ${r.code}): ${r.err}`);
  return { code: r.code, report: JSON.parse(r.out) as JudgeReport, err: r.err };
}

const findingsOf = (report: JudgeReport) => report.checks.flatMap((c) => c.findings);

describe('awaken judge against awaken serve (real process, real socket)', () => {
  let server: ServeProcess;
  beforeAll(async () => {
    server = await startServe(['--store', 'memory', '--model', 'scripted:fixtures/scripts/demo-conversation.yaml']);
  });
  afterAll(async () => {
    await server.stop();
  });

  it.each([
    ['ai-sdk-v6', '/v1/ai-sdk/chat', 3],
    ['ag-ui', '/v1/ag-ui/run', 3],
    ['a2a', '', 3],
    ['mcp', '/v1/mcp', 2],
  ])('%s: a tool call, then a second message whose approval is answered — every check passes', async (protocol, path, turns) => {
    const save = mkdtempSync(join(tmpdir(), 'awaken-judge-save-'));
    const { code, report } = await judge([
      '--protocol',
      protocol,
      '--url',
      `${server.url}${path}`,
      '--message',
      'weather in Oslo?',
      '--then',
      'delete the branch',
      '--approve',
      '--save',
      save,
    ]);
    expect(findingsOf(report)).toEqual([]);
    expect(code).toBe(0);
    // The approval answered is a turn of its own, except in MCP (no approvals in a tools/call).
    expect(report.turns.length).toBe(turns);
    expect(report.turns.every((n) => n > 0)).toBe(true);
    // What was recorded judges the same from the files.
    const files = readdirSync(save)
      .sort()
      .map((f) => join(save, f));
    expect(files.length).toBe(turns);
    const again = await judge(['--protocol', protocol, ...files]);
    expect(again.code).toBe(0);
    expect(again.report.turns).toEqual(report.turns);
  });

  it('ai-sdk-v6: the approval denied is judged too, and the bodies hold the answer the chat showed', async () => {
    const save = mkdtempSync(join(tmpdir(), 'awaken-judge-save-'));
    const { code } = await judge([
      '--protocol',
      'ai-sdk-v6',
      '--url',
      `${server.url}/v1/ai-sdk/chat`,
      '--message',
      'weather in Oslo?',
      '--then',
      'delete the branch',
      '--deny',
      '--save',
      save,
    ]);
    expect(code).toBe(0);
    expect(readFileSync(join(save, 'turn-3.sse'), 'utf8')).toContain('tool-output-denied');
  });

  it('with API tokens: without --token the server refuses (exit 1, the status named); with it, every check passes', async () => {
    const guarded = await startServe(['--store', 'memory', '--model', 'scripted:fixtures/scripts/demo-conversation.yaml'], {
      AWAKEN_API_TOKEN: 'judge-secret',
    });
    try {
      const refused = await cli(['judge', '--protocol', 'ag-ui', '--url', `${guarded.url}/v1/ag-ui/run`, '--message', 'weather in Oslo?']);
      expect(refused.code).toBe(1);
      expect(refused.err).toMatch(/answered 401/);
      const { code } = await judge(['--protocol', 'ag-ui', '--url', `${guarded.url}/v1/ag-ui/run`, '--message', 'weather in Oslo?', '--token', 'judge-secret']);
      expect(code).toBe(0);
    } finally {
      await guarded.stop();
    }
  });

  it('acp: awaken acp as a process, the permission approved within the turn — every check passes', async () => {
    const { code, report } = await judge([
      '--protocol',
      'acp',
      '--command',
      `"${process.execPath}" src/cli/awaken.js acp --model scripted:fixtures/scripts/demo-conversation.yaml`,
      '--message',
      'weather in Oslo?',
      '--then',
      'delete the branch',
      '--approve',
    ]);
    expect(findingsOf(report)).toEqual([]);
    expect(code).toBe(0);
    expect(report.turns.length).toBe(2);
  });
});

/** A foreign server on a free port: the handler answers every POST. */
async function serve(
  handler: (req: IncomingMessage, res: ServerResponse, body: string) => void | Promise<void>,
): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => void handler(req, res, body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, close: () => new Promise((r) => server.close(() => r())) };
}

describe('awaken judge against foreign servers made with the protocols’ own helpers', () => {
  /** An AI SDK chat endpoint made with `createUIMessageStream`: a text answer and a tool call with its output. */
  const aiSdkServer = (broken: boolean) =>
    serve((_req, res) => {
      const stream = createUIMessageStream({
        execute: ({ writer }) => {
          const write = (c: UIMessageChunk): void => writer.write(c);
          write({ type: 'start' });
          write({ type: 'start-step' });
          if (!broken) write({ type: 'text-start', id: 't1' });
          write({ type: 'text-delta', id: 't1', delta: 'Looking it up.' });
          write({ type: 'text-end', id: 't1' });
          write({ type: 'tool-input-available', toolCallId: 'x1', toolName: 'lookup', input: { q: 'oslo' } });
          write({ type: 'tool-output-available', toolCallId: 'x1', output: { found: true } });
          write({ type: 'finish-step' });
          write({ type: 'finish' });
        },
      });
      pipeUIMessageStreamToResponse({ response: res, stream });
    });

  it('ai-sdk-v6: createUIMessageStream — passes; the same with a delta for a part never started exits 1 and names it', async () => {
    const good = await aiSdkServer(false);
    const bad = await aiSdkServer(true);
    try {
      const ok = await judge(['--protocol', 'ai-sdk-v6', '--url', `${good.url}/api/chat`, '--message', 'hi']);
      expect(findingsOf(ok.report)).toEqual([]);
      expect(ok.code).toBe(0);
      const ko = await judge(['--protocol', 'ai-sdk-v6', '--url', `${bad.url}/api/chat`, '--message', 'hi']);
      expect(ko.code).toBe(1);
      expect(findingsOf(ko.report)).toContainEqual(
        expect.objectContaining({
          check: 'ordering',
          turn: 1,
          frame: 3,
          message: 'text-delta for text part t1, which was never started (or is already ended)',
        }),
      );
    } finally {
      await good.close();
      await bad.close();
    }
  });

  /** An AG-UI endpoint made with `@ag-ui/encoder`'s `EventEncoder`. */
  const agUiServer = (broken: boolean) =>
    serve((req, res, body) => {
      const input = JSON.parse(body) as { threadId: string; runId: string };
      const encoder = new EventEncoder({ accept: req.headers.accept ?? 'text/event-stream' });
      res.writeHead(200, { 'content-type': encoder.getContentType() });
      const events: BaseEvent[] = [
        { type: EventType.RUN_STARTED, threadId: input.threadId, runId: input.runId } as BaseEvent,
        { type: EventType.TEXT_MESSAGE_START, messageId: 'm1', role: 'assistant' } as BaseEvent,
        { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm1', delta: 'Hello from elsewhere.' } as BaseEvent,
        ...(broken ? [] : [{ type: EventType.TEXT_MESSAGE_END, messageId: 'm1' } as BaseEvent]),
        { type: EventType.RUN_FINISHED, threadId: input.threadId, runId: input.runId } as BaseEvent,
      ];
      for (const e of events) res.write(encoder.encode(e as never));
      res.end();
    });

  it('ag-ui: EventEncoder — passes over two turns; an unclosed text message exits 1 and names it', async () => {
    const good = await agUiServer(false);
    const bad = await agUiServer(true);
    try {
      const ok = await judge(['--protocol', 'ag-ui', '--url', good.url, '--message', 'hi', '--then', 'again']);
      expect(findingsOf(ok.report)).toEqual([]);
      expect(ok.report.turns.length).toBe(2);
      expect(ok.code).toBe(0);
      const ko = await judge(['--protocol', 'ag-ui', '--url', bad.url, '--message', 'hi']);
      expect(ko.code).toBe(1);
      expect(findingsOf(ko.report)).toContainEqual(
        expect.objectContaining({ check: 'closure', turn: 1, frame: 2, message: 'text message m1 opened here is never ended (the run finishes)' }),
      );
    } finally {
      await good.close();
      await bad.close();
    }
  });

  it('a2a: DefaultRequestHandler over JSON-RPC (a task, a streamed artifact, completed) — passes; an artifact never closed exits 1 and names it', async () => {
    const a2aServer = async (broken: boolean) => {
      const executor: AgentExecutor = {
        execute: async (ctx, bus) => {
          const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
          bus.publish(AgentEvent.task(Task.fromJSON({ id: ctx.taskId, contextId: ctx.contextId, status: { state: 'TASK_STATE_WORKING' } })));
          bus.publish(
            AgentEvent.artifactUpdate(
              TaskArtifactUpdateEvent.fromJSON({ ...ids, artifact: { artifactId: 'answer', name: 'answer', parts: [{ text: 'Hello ' }] } }),
            ),
          );
          bus.publish(
            AgentEvent.artifactUpdate(
              TaskArtifactUpdateEvent.fromJSON({
                ...ids,
                artifact: { artifactId: 'answer', name: 'answer', parts: [{ text: 'from elsewhere.' }] },
                append: true,
                lastChunk: !broken,
              }),
            ),
          );
          bus.publish(AgentEvent.statusUpdate(TaskStatusUpdateEvent.fromJSON({ ...ids, status: { state: 'TASK_STATE_COMPLETED' } })));
          bus.finished();
        },
        cancelTask: async () => undefined,
      };
      let url = '';
      const card = (): AgentCard =>
        AgentCard.fromJSON({
          name: 'foreign',
          description: 'a foreign A2A agent',
          version: '1.0.0',
          supportedInterfaces: [{ url: `${url}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
          capabilities: { streaming: true },
          defaultInputModes: ['text/plain'],
          defaultOutputModes: ['text/plain'],
          skills: [],
        });
      let transport: JsonRpcTransportHandler | undefined;
      const server = await serve(async (req, res, body) => {
        transport ??= new JsonRpcTransportHandler(new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor));
        if (req.method === 'GET') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(AgentCard.toJSON(card())));
          return;
        }
        const out = await transport.handle(body, new ServerCallContext({ requestedVersion: String(req.headers['a2a-version'] ?? '1.0') } as never));
        if (Symbol.asyncIterator in (out as object)) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          for await (const r of out as AsyncGenerator<unknown>) res.write(`data: ${JSON.stringify(r)}\n\n`);
          res.end();
        } else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
      });
      url = server.url;
      return server;
    };
    const good = await a2aServer(false);
    const bad = await a2aServer(true);
    try {
      const ok = await judge(['--protocol', 'a2a', '--url', good.url, '--message', 'hi', '--then', 'again']);
      expect(findingsOf(ok.report)).toEqual([]);
      expect(ok.report.turns.length).toBe(2);
      expect(ok.code).toBe(0);
      const ko = await judge(['--protocol', 'a2a', '--url', bad.url, '--message', 'hi']);
      expect(ko.code).toBe(1);
      expect(findingsOf(ko.report)).toContainEqual(
        expect.objectContaining({ check: 'closure', turn: 1, frame: 2, message: 'artifact answer streamed from here has no last chunk before the task ends' }),
      );
    } finally {
      await good.close();
      await bad.close();
    }
  });

  it('mcp: McpServer over Streamable HTTP, a tool with progress — passes; progress that goes backwards exits 1 and names it', async () => {
    const mcpServer = (broken: boolean) =>
      serve(async (req, res, body) => {
        const server = new McpServer({ name: 'foreign', version: '1.0.0' });
        server.registerTool('lookup', { description: 'looks something up', inputSchema: { query: z.string() } }, async ({ query }, extra) => {
          const token = extra._meta?.progressToken;
          if (token !== undefined) {
            for (const p of broken ? [2, 1] : [1, 2])
              await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: p, total: 2 } });
          }
          return { content: [{ type: 'text', text: `found ${query}` }] };
        });
        const transport = new StreamableHTTPServerTransport({} as ConstructorParameters<typeof StreamableHTTPServerTransport>[0]);
        res.on('close', () => void transport.close());
        await server.connect(transport);
        await transport.handleRequest(req, res, body === '' ? undefined : JSON.parse(body));
      });
    const good = await mcpServer(false);
    const bad = await mcpServer(true);
    try {
      const ok = await judge(['--protocol', 'mcp', '--url', `${good.url}/mcp`, '--message', 'oslo']);
      expect(findingsOf(ok.report)).toEqual([]);
      expect(ok.code).toBe(0);
      const ko = await judge(['--protocol', 'mcp', '--url', `${bad.url}/mcp`, '--message', 'oslo']);
      expect(ko.code).toBe(1);
      expect(findingsOf(ko.report)).toContainEqual(
        expect.objectContaining({ check: 'ordering', turn: 1, frame: 2, message: 'progress 1 does not increase (was 2)' }),
      );
    } finally {
      await good.close();
      await bad.close();
    }
  });

  it('acp: an agent made with the ACP SDK — passes with the permission approved; a call left running exits 1 and names it', async () => {
    const agent = `"${process.execPath}" ${join(repo, 'spec/cli/fixtures/foreign-acp-agent.mjs')}`;
    const ok = await judge(['--protocol', 'acp', '--command', agent, '--message', 'hi', '--approve', '--then', 'again']);
    expect(findingsOf(ok.report)).toEqual([]);
    expect(ok.code).toBe(0);
    const ko = await judge(['--protocol', 'acp', '--command', `FOREIGN_ACP_BROKEN=1 ${agent}`, '--message', 'hi']);
    expect(ko.code).toBe(1);
    expect(findingsOf(ko.report)).toContainEqual(
      expect.objectContaining({
        check: 'closure',
        turn: 1,
        frame: 2,
        message: 'tool call call-1 announced here is still in_progress when the turn ends (end_turn)',
      }),
    );
  });
});
