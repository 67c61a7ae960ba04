import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * MCP over stdio (newline-delimited JSON-RPC), like the SDK's `StdioServerTransport`, except that a
 * line that is not JSON is answered with a parse error (-32700) and JSON that is not a JSON-RPC
 * message with an invalid-request error (-32600), as JSON-RPC asks, instead of being dropped.
 */
export class LineStdioTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  readonly #input: NodeJS.ReadableStream;
  readonly #output: NodeJS.WritableStream;
  #buffer = '';
  #closed = false;

  constructor(input: NodeJS.ReadableStream = process.stdin, output: NodeJS.WritableStream = process.stdout) {
    this.#input = input;
    this.#output = output;
  }

  readonly #onData = (chunk: Buffer | string): void => {
    this.#buffer += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    for (let at = this.#buffer.indexOf('\n'); at >= 0; at = this.#buffer.indexOf('\n')) {
      const line = this.#buffer.slice(0, at).replace(/\r$/, '');
      this.#buffer = this.#buffer.slice(at + 1);
      if (line.trim() !== '') this.#line(line);
    }
  };

  readonly #onEnd = (): void => void this.close();

  #line(line: string): void {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      this.#reply(undefined, -32700, `Parse error: ${e instanceof Error ? e.message : String(e)}`);
      return;
    }
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
      const id = typeof value === 'object' && value !== null && 'id' in value ? (value as { id: unknown }).id : null;
      this.#reply(typeof id === 'string' || typeof id === 'number' ? id : undefined, -32600, 'Invalid Request: not a JSON-RPC 2.0 message');
      return;
    }
    this.onmessage?.(parsed.data);
  }

  /** An error response; without a usable request id the id is left out (MCP's schema has no null id). */
  #reply(id: string | number | undefined, code: number, message: string): void {
    this.#output.write(`${JSON.stringify({ jsonrpc: '2.0', ...(id !== undefined ? { id } : {}), error: { code, message } })}\n`);
  }

  start(): Promise<void> {
    this.#input.on('data', this.#onData);
    this.#input.on('end', this.#onEnd);
    this.#input.on('error', (e: Error) => this.onerror?.(e));
    return Promise.resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      if (this.#output.write(`${JSON.stringify(message)}\n`)) resolve();
      else this.#output.once('drain', () => resolve());
    });
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    this.#input.off('data', this.#onData);
    this.#input.off('end', this.#onEnd);
    this.onclose?.();
    return Promise.resolve();
  }
}
