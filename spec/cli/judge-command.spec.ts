import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit.ts';
import { otherProtocolOf } from '../../src/protocols/findings.ts';
import { cli } from '../support/cli.ts';
import { repo, startServe, type ServeProcess } from '../support/serve-process.ts';

/**
 * `awaken judge` when what it is given is not what it was told: a body of another protocol is named
 * as such in one line (no findings, no schema dumps); `--approve` in a conversation that asked for no
 * approval is said to have gone unused; a server that drops the connection is reported with why.
 */

/** The table of checks `awaken judge` prints, with the schema and client rows as given. */
const TABLE = (schema: string, client: string): string =>
  [
    'check        result  findings',
    `schema       ${schema}   every frame parses and the protocol's official schema or codec accepts it`,
    'ordering     pass           0   every frame comes where the protocol allows it (no delta or end for a block never started, no frame after the end)',
    'closure      pass           0   every block opened (text, reasoning, tool call, artifact) is closed before the stream finishes',
    'terminal     pass           0   exactly one terminal frame per run, and the body ends the way the protocol ends it',
    `client       ${client}   the protocol's official client reads the body without an error, a repair or a warning`,
    'multi-turn   pass           0   the turns of one conversation agree: a tool call keeps its name and its conversation',
  ].join('\n');

const PROTOCOLS = ['ai-sdk-v6', 'ag-ui', 'a2a', 'mcp', 'acp'] as const;
const golden = (protocol: string): string[] =>
  readdirSync(join(repo, 'conformance/golden', protocol)).map((f) => join(repo, 'conformance/golden', protocol, f));

describe('a body of another protocol', () => {
  it('every golden body is taken for its own protocol, never for another’s (a body of one JSON-RPC error, which any JSON-RPC protocol may send, for none)', () => {
    for (const protocol of PROTOCOLS) {
      for (const file of golden(protocol)) {
        const body = readFileSync(file, 'utf8');
        const onlyAnError = body
          .trim()
          .split('\n')
          .every((l) => /^\{"jsonrpc":"2\.0","id":[^,]+,"error":/.test(l));
        expect(otherProtocolOf(body, protocol), file).toBeUndefined();
        for (const other of PROTOCOLS.filter((p) => p !== protocol))
          expect(otherProtocolOf(body, other), `${file} as ${other}`).toBe(onlyAnError ? undefined : protocol);
      }
    }
  });

  it('docs/judge.md: its example, run as shown in a directory holding an AG-UI turn-1.sse', () => {
    const doc = readFileSync(join(repo, 'docs/judge.md'), 'utf8');
    const [, command, line] = /\$ npx (awaken judge [^\n]+)\n(awaken judge: [^\n]+)\n/.exec(doc) as unknown as [string, string, string];
    const dir = mkdtempSync(join(tmpdir(), 'awaken-judge-doc-'));
    writeFileSync(join(dir, 'turn-1.sse'), readFileSync(golden('ag-ui')[0] as string, 'utf8'));
    const r = spawnSync(process.execPath, [join(repo, 'src/cli/awaken.js'), ...command.split(' ').slice(1)], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    expect({ code: r.status, out: r.stdout, err: r.stderr }).toEqual({ code: EXIT.usage, out: '', err: `${line}\n` });
  });

  it.each(PROTOCOLS.flatMap((own) => PROTOCOLS.filter((p) => p !== own).map((told) => [own, told] as const)))(
    'a %s body judged as %s: one line naming the protocol it looks like, exit 64',
    async (own, told) => {
      const file = golden(own)[0] as string;
      expect(await cli('judge', '--protocol', told, file)).toEqual({
        code: EXIT.usage,
        out: '',
        err: `awaken judge: ${file}: this looks like ${own}, not ${told}; try --protocol ${own}\n`,
      });
    },
  );
});

describe('a body of the right protocol with a frame its schema rejects', () => {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-judge-schema-'));

  it.each([
    [
      'ai-sdk-v6',
      'data: {"type":"start"}\n\ndata: {"type":"text-start","id":"t"}\n\ndata: {"type":"text-delta","id":"t"}\n\ndata: {"type":"text-end","id":"t"}\n\ndata: {"type":"finish"}\n\ndata: [DONE]\n\n',
      `ai-sdk-v6: 1 turn, 6 frames — FAIL\n\n${TABLE('FAIL           1', 'FAIL           1')}\n\nschema · frame 3: uiMessageChunkSchema rejects it: delta: Invalid input: expected string, received undefined\n  > data: {"type":"text-delta","id":"t"}\n\nclient · body: the client's stream reader fails: Type validation failed: Value: {"type":"text-delta","id":"t"}. (delta: Invalid input: expected string, received undefined)\n`,
    ],
    [
      'ag-ui',
      'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\ndata: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}\n\ndata: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":5}\n\ndata: {"type":"TEXT_MESSAGE_END","messageId":"m"}\n\ndata: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n',
      `ag-ui: 1 turn, 5 frames — FAIL\n\n${TABLE('FAIL           1', 'FAIL           1')}\n\nschema · frame 3: EventSchema rejects it: delta: Invalid input: expected string, received number\n  > data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":5}\n\nclient · body: runAgent: delta: Invalid input: expected string, received number\n`,
    ],
  ])('%s: each finding is one line naming the field, never a dump of the schema’s issues', async (protocol, body, out) => {
    const file = join(dir, `${protocol}.sse`);
    writeFileSync(file, body);
    expect(await cli('judge', '--protocol', protocol, file)).toEqual({ code: EXIT.failed, out, err: '' });
  });
});

describe('--approve in a conversation that asks for no approval', () => {
  let server: ServeProcess;
  beforeAll(async () => {
    server = await startServe(['--store', 'memory', '--model', 'scripted:fixtures/scripts/demo-weather.yaml']);
  });
  afterAll(async () => {
    await server.stop();
  });

  it('the report says the answer went unused (a note, not a finding: the server did nothing wrong)', async () => {
    const r = await cli('judge', '--protocol', 'ai-sdk-v6', '--url', `${server.url}/v1/ai-sdk/chat`, '--message', 'weather in Tokyo?', '--approve');
    expect({ code: r.code, err: r.err }).toEqual({ code: EXIT.ok, err: '' });
    const documented = readFileSync(join(repo, 'docs/judge.md'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('note: '));
    expect(documented).toBe('note: --approve went unused: the server asked for no approval in this conversation');
    expect(r.out).toBe(`ai-sdk-v6: 1 turn, 24 frames — PASS\n\n${TABLE('pass           0', 'pass           0')}\n\n${documented}\n`);
    const json = JSON.parse(
      (await cli('judge', '--json', '--protocol', 'ai-sdk-v6', '--url', `${server.url}/v1/ai-sdk/chat`, '--message', 'weather in Tokyo?', '--deny')).out,
    ) as { passed: boolean; notes: string[] };
    expect(json).toMatchObject({ passed: true, notes: ['--deny went unused: the server asked for no approval in this conversation'] });
    // Without --approve nothing is said.
    expect((await cli('judge', '--protocol', 'ai-sdk-v6', '--url', `${server.url}/v1/ai-sdk/chat`, '--message', 'weather in Tokyo?')).out).not.toContain(
      'note:',
    );
  });
});

describe('a server that drops the connection', () => {
  let crashing: Server | undefined;
  afterEach(async () => {
    await new Promise<void>((r) => (crashing === undefined ? r() : crashing.close(() => r())));
    crashing = undefined;
  });
  const serve = async (handler: Parameters<typeof createServer>[1]): Promise<string> => {
    crashing = createServer(handler);
    await new Promise<void>((r) => crashing?.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(crashing.address() as AddressInfo).port}/chat`;
  };

  it('before it answers: the cause, exit 69', async () => {
    const url = await serve((req) => req.socket.destroy());
    expect(await cli('judge', '--protocol', 'ai-sdk-v6', '--url', url)).toEqual({
      code: EXIT.unavailable,
      out: '',
      err: `awaken judge: the conversation with ${url} failed: fetch failed: other side closed (UND_ERR_SOCKET)\n`,
    });
  });

  it('in the middle of its answer: the cause, exit 69', async () => {
    const url = await serve((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-vercel-ai-ui-message-stream': 'v1' });
      res.write('data: {"type":"start"}\n\ndata: {"type":"text-start","id":"t"}\n\n');
      setTimeout(() => req.socket.destroy(), 20);
    });
    expect(await cli('judge', '--protocol', 'ai-sdk-v6', '--url', url)).toEqual({
      code: EXIT.unavailable,
      out: '',
      err: `awaken judge: the conversation with ${url} failed: terminated: other side closed (UND_ERR_SOCKET)\n`,
    });
  });
});
