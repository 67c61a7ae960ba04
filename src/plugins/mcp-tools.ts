import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { JsonValue } from '../contract/json.ts';
import { ToolResults } from '../contract/tool.ts';
import { operatorOutbound } from '../runtime/outbound.ts';
import type { Tool } from '../runtime/tool.ts';
import { ToolFailure } from '../runtime/tool.ts';

/**
 * MCP servers' tools as runtime tools (book: 使用 MCP Tools): connect over Streamable HTTP or
 * stdio, list the tools, and register each as `mcp__<server>__<tool>`. A call is `tools/call`; its
 * progress notifications become the call's progress; its text content is the result's `text`
 * (with `structured` when the server sends structured content), `isError` a tool error, and the
 * result's metadata names the server and the tool (`mcp.server`, `mcp.tool`).
 */

/** An MCP server at a URL (Streamable HTTP): what `awaken serve`'s `mcp-servers` config accepts. */
export const McpHttpServerSchema = z.object({ url: z.string().url(), description: z.string().optional() }).strict();

/** Where an MCP server is: a URL (Streamable HTTP), or a command to start (stdio). */
export const McpServerConfigSchema = z.union([
  McpHttpServerSchema,
  z
    .object({
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      env: z.record(z.string(), z.string()).optional(),
      cwd: z.string().optional(),
      description: z.string().optional(),
    })
    .strict(),
]);
export type McpServerConfig = z.input<typeof McpServerConfigSchema>;

/** A connected MCP server and the tools it offers, as runtime tools. */
export interface McpToolSource {
  readonly tools: readonly Tool[];
  /** Lists the server's tools again (a server may add or drop tools); the same tools when it did not change. */
  refresh(): Promise<readonly Tool[]>;
  close(): Promise<void>;
}

export interface McpConnectOptions {
  /** How long to wait for the connection and each listing (default 10 s); a call honours its run's cancel. */
  readonly timeoutMs?: number;
  /** The client's version in the MCP handshake. */
  readonly version?: string;
  /** List the tools again this often (ms); none by default (a server's `tools/list_changed` refreshes them anyway). */
  readonly refreshMs?: number;
  /** Told when a refresh finds the tools changed (publish them to the runtime from here). */
  readonly onToolsChanged?: (tools: readonly Tool[]) => void;
  /** Told when a periodic or notified refresh fails (the tools stay as they were). */
  readonly onError?: (e: unknown) => void;
  /**
   * What an HTTP server is reached through (default: the operator's outbound guard — link-local and
   * metadata addresses refused; `awaken serve` gives its own guard, docs/server.md → Outbound settings).
   */
  readonly fetch?: typeof fetch;
}

/** One part of an MCP tool id: every run of characters other than ASCII letters and digits one `_`, none at either end. */
const idPart = (raw: string): string => raw.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_+|_+$/g, '');

/**
 * Tool ids of an MCP server's tools (book: 使用 MCP Tools): `mcp__<server>__<tool>`, each part kept
 * to ASCII letters, digits and single underscores (as 0.6's `to_tool_id`), the whole to the 64
 * characters model APIs accept; `undefined` when a part has nothing left (such a tool is not offered).
 */
export const mcpToolId = (server: string, tool: string): string | undefined => {
  const s = idPart(server);
  const t = idPart(tool);
  return s === '' || t === '' ? undefined : `mcp__${s}__${t}`.slice(0, 64);
};

function transportOf(config: McpServerConfig, fetchImpl: typeof fetch): Transport {
  if ('url' in config) return new StreamableHTTPClientTransport(new URL(config.url), { fetch: fetchImpl });
  const c = McpServerConfigSchema.parse(config) as { command: string; args: string[]; env?: Record<string, string>; cwd?: string };
  return new StdioClientTransport({
    command: c.command,
    args: c.args,
    ...(c.env !== undefined ? { env: { ...(process.env as Record<string, string>), ...c.env } } : {}),
    ...(c.cwd !== undefined ? { cwd: c.cwd } : {}),
    stderr: 'pipe',
  });
}

/** Races `work` against a timer; the timer is always cleared. */
async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Connects to one MCP server (`name` prefixes its tool ids) over HTTP or stdio. A connection that
 * drops (the server process died, the HTTP session ended) is made again before the next call or
 * listing; a call that was under way when it dropped fails (it is not sent twice). The tools are
 * listed again when the server says they changed (`notifications/tools/list_changed`) and every
 * `refreshMs`.
 */
export async function connectMcp(name: string, config: McpServerConfig, options: McpConnectOptions = {}): Promise<McpToolSource> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  let client: Client;
  let broken = false;
  let closed = false;
  let tools: readonly Tool[] = [];
  const wrap = (t: { name: string; description?: string | undefined; inputSchema: unknown }, id: string): Tool => {
    const metadata = { mcp: { server: name, tool: t.name } };
    return {
      descriptor: { id, name: id, description: t.description ?? `${t.name} (MCP server ${name})`, parameters: t.inputSchema as JsonValue },
      execute: async (args, ctx) => {
        let result: Awaited<ReturnType<Client['callTool']>>;
        try {
          if (broken) await reconnect();
          result = await client.callTool({ name: t.name, arguments: (args ?? {}) as Record<string, unknown> }, undefined, {
            signal: ctx.signal,
            onprogress: (p) => void ctx.reportProgress('running', p.message, p.total !== undefined && p.total > 0 ? p.progress / p.total : undefined),
          });
        } catch (e) {
          throw new ToolFailure({ code: 'execution_failed', message: `MCP server ${name}: ${e instanceof Error ? e.message : String(e)}` });
        }
        const text = ((result.content ?? []) as { type: string; text?: string }[])
          .flatMap((c) => (c.type === 'text' && c.text !== undefined ? [c.text] : []))
          .join('\n');
        if (result.isError === true) return { ...ToolResults.error(id, text === '' ? 'the MCP tool failed' : text), metadata };
        const structured = result.structuredContent as JsonValue | undefined;
        return { ...ToolResults.success(id, structured === undefined ? { text } : { text, structured }), metadata };
      },
    };
  };
  /** The tools listed now; `onToolsChanged` hears of a change. */
  let listedOnce = false;
  const listed = (list: Awaited<ReturnType<Client['listTools']>>): readonly Tool[] => {
    const before = JSON.stringify(tools.map((t) => t.descriptor));
    tools = list.tools.flatMap((t) => {
      const id = mcpToolId(name, t.name);
      return id === undefined ? [] : [wrap(t, id)];
    });
    if (listedOnce && before !== JSON.stringify(tools.map((t) => t.descriptor))) options.onToolsChanged?.(tools);
    listedOnce = true;
    return tools;
  };
  const refresh = async (): Promise<readonly Tool[]> => {
    if (broken) await reconnect();
    return listed(await within(timeoutMs, `MCP server ${name}`, client.listTools(undefined, { timeout: timeoutMs })));
  };
  /** A new client and transport, connected and listed; a server that never answers is given up on. */
  const open = async (): Promise<void> => {
    const next = new Client({ name: 'awaken', version: options.version ?? '0.0.0' });
    next.onclose = () => {
      if (client === next) broken = true;
    };
    next.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      void refresh().catch((e: unknown) => options.onError?.(e));
    });
    try {
      const list = await within(
        timeoutMs,
        `MCP server ${name}`,
        (async () => {
          await next.connect(transportOf(config, options.fetch ?? operatorOutbound.fetch), { timeout: timeoutMs });
          return next.listTools(undefined, { timeout: timeoutMs });
        })(),
      );
      client = next;
      broken = false;
      listed(list);
    } catch (e) {
      await next.close().catch(() => undefined);
      throw e;
    }
  };
  let reconnecting: Promise<void> | undefined;
  const reconnect = (): Promise<void> => {
    if (closed) return Promise.reject(new Error('the MCP connection is closed'));
    reconnecting ??= (async () => {
      await client.close().catch(() => undefined);
      await open();
    })().finally(() => (reconnecting = undefined));
    return reconnecting;
  };
  await open();
  const timer =
    options.refreshMs !== undefined && options.refreshMs > 0
      ? setInterval(() => void refresh().catch((e: unknown) => options.onError?.(e)), options.refreshMs)
      : undefined;
  timer?.unref();
  return {
    get tools() {
      return tools;
    },
    refresh,
    close: async () => {
      closed = true;
      if (timer !== undefined) clearInterval(timer);
      await client.close();
    },
  };
}

/** `connectMcp` over Streamable HTTP (the server's `mcp-servers` config), through `fetchImpl` (an outbound guard's). */
export const connectMcpServer = (name: string, url: string, version: string, timeoutMs = 10_000, fetchImpl?: typeof fetch): Promise<McpToolSource> =>
  connectMcp(name, { url }, { version, timeoutMs, ...(fetchImpl !== undefined ? { fetch: fetchImpl } : {}) });

/**
 * Several MCP servers' tools in one registry (book: McpToolRegistryManager): `connect` them all (a
 * server that cannot be reached fails the whole connect, naming it; the others are closed), read
 * `ids()` and `snapshot()` for the builder, `startPeriodicRefresh(ms)` to list them again on a timer.
 * A tool id two servers would both have is refused.
 */
export class McpToolRegistryManager {
  readonly #sources: ReadonlyMap<string, McpToolSource>;
  #timer: ReturnType<typeof setInterval> | undefined;

  private constructor(sources: ReadonlyMap<string, McpToolSource>) {
    this.#sources = sources;
  }

  static async connect(servers: Readonly<Record<string, McpServerConfig>>, options: McpConnectOptions = {}): Promise<McpToolRegistryManager> {
    const sources = new Map<string, McpToolSource>();
    try {
      for (const [name, config] of Object.entries(servers).sort(([a], [b]) => (a < b ? -1 : 1))) {
        try {
          sources.set(name, await connectMcp(name, config, options));
        } catch (e) {
          throw new Error(`MCP server ${name}: ${e instanceof Error ? e.message : String(e)}`);
        }
      }
      const manager = new McpToolRegistryManager(sources);
      manager.snapshot();
      return manager;
    } catch (e) {
      for (const s of sources.values()) await s.close().catch(() => undefined);
      throw e;
    }
  }

  /** The tool ids, sorted. */
  ids(): string[] {
    return this.snapshot().map(([id]) => id);
  }

  /** `[id, tool]` of every server's tools now, sorted by id. */
  snapshot(): [string, Tool][] {
    const all = new Map<string, Tool>();
    for (const [name, source] of this.#sources) {
      for (const tool of source.tools) {
        if (all.has(tool.descriptor.id)) throw new Error(`MCP tool id ${tool.descriptor.id} of server ${name} is another server's too`);
        all.set(tool.descriptor.id, tool);
      }
    }
    return [...all].sort(([a], [b]) => (a < b ? -1 : 1));
  }

  /** Lists every server's tools again. */
  async refresh(): Promise<[string, Tool][]> {
    for (const source of this.#sources.values()) await source.refresh();
    return this.snapshot();
  }

  /** Lists the tools again every `ms` (errors go to `onError`); a second call replaces the first timer. */
  startPeriodicRefresh(ms: number, onError: (e: unknown) => void = () => undefined): void {
    this.stopPeriodicRefresh();
    this.#timer = setInterval(() => void this.refresh().catch(onError), ms);
    this.#timer.unref();
  }

  stopPeriodicRefresh(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async close(): Promise<void> {
    this.stopPeriodicRefresh();
    for (const s of this.#sources.values()) await s.close().catch(() => undefined);
  }
}
