import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { State } from '../support/ai-chat.ts';
import { besideProject, listeningUrl, packedProject } from '../support/packed-setup.ts';

/**
 * A tool the client runs, through the installed package: a user's own app (a TypeScript file in a
 * project that installed the packed tarball, importing `awaken-ts`, `ai` and `zod` from it) served by
 * the project's `awaken serve --app`, and the two clients that run such tools — the AI SDK's chat
 * (the project's own `ai`: `AbstractChat`, `DefaultChatTransport`, as `useChat` drives them) and an
 * AG-UI client declaring its tool in `RunAgentInput.tools` — talking to it over HTTP.
 */

/** The user's app: `get_location` is an AI SDK tool without `execute`; `pick_color` is no tool of the app at all. */
const APP = `import { tool } from 'ai';
import { z } from 'zod';
import { defineApp, scriptedProvider } from 'awaken-ts';

// No execute: the page knows where the user is, so the page runs it.
const getLocation = tool({
  description: 'Where the user is, as the browser knows it',
  inputSchema: z.object({ precision: z.enum(['city', 'street']) }),
});

export default defineApp({
  agents: [
    { id: 'guide', model: 'guide', system_prompt: 'You say where the user is.' },
    { id: 'painter', model: 'painter', system_prompt: 'You paint in the colour the user picks.' },
  ],
  tools: { get_location: getLocation },
  models: {
    guide: { provider: 'guide', model_name: 'guide-script' },
    painter: { provider: 'painter', model_name: 'painter-script' },
  },
  providers: {
    guide: scriptedProvider([
      { text: 'Let me look.', tool_calls: [{ id: 'call_where', name: 'get_location', arguments: { precision: 'city' } }] },
      { text: ['You are in ', 'Bergen.'] },
    ]),
    // pick_color is the page's: an AG-UI client declares it with each run.
    painter: scriptedProvider([
      { tool_calls: [{ id: 'call_pick', name: 'pick_color', arguments: { palette: 'warm' } }] },
      { text: 'Painting it red.' },
    ]),
  },
});
`;

let project = '';
let child: ChildProcess | undefined;
let url = '';

beforeAll(async () => {
  const packed = await packedProject();
  project = besideProject(packed, 'client-tool');
  writeFileSync(join(project, 'app.ts'), APP);
  const started = spawn(join(project, 'node_modules/.bin/awaken'), ['serve', '--app', 'app.ts', '--store', 'memory', '--port', '0'], {
    cwd: project,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' },
  });
  child = started;
  url = await listeningUrl(started, 20_000);
}, 900_000);

afterAll(async () => {
  if (child !== undefined && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child?.once('exit', r));
  }
});

/** The project's own `ai` (not this repository's): the ES module its package.json exports. */
async function projectAi(): Promise<typeof import('ai')> {
  const dir = join(project, 'node_modules/ai');
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { exports: { '.': { import: string } } };
  return (await import(pathToFileURL(join(dir, pkg.exports['.'].import)).href)) as typeof import('ai');
}

interface StoredMessage {
  readonly role: string;
  readonly content: readonly { type: string; text?: string }[];
  readonly tool_calls?: readonly { id: string; name: string; arguments: unknown }[];
  readonly tool_call_id?: string;
}

/** The thread's stored history, each message as its role, its text and its calls or the call it answers. */
async function history(thread: string): Promise<object[]> {
  const res = await fetch(`${url}/v1/threads/${thread}/messages?limit=200`);
  expect(res.status).toBe(200);
  const { messages } = (await res.json()) as { messages: StoredMessage[] };
  return messages.map((m) => ({
    role: m.role,
    text: m.content.map((c) => c.text ?? `<${c.type}>`).join(''),
    ...(m.tool_calls !== undefined && m.tool_calls.length > 0 ? { tool_calls: m.tool_calls } : {}),
    ...(m.tool_call_id !== undefined ? { tool_call_id: m.tool_call_id } : {}),
  }));
}

type AgUiEvent = { readonly type: string; readonly [k: string]: unknown };

async function runsOf(thread: string): Promise<string[]> {
  const { items } = (await (await fetch(`${url}/v1/runs?thread_id=${thread}`)).json()) as { items: { status: string }[] };
  return items.map((r) => r.status);
}

describe("a client tool of a user's app, served by the installed awaken serve --app", () => {
  it("the AI SDK chat: onToolCall gets the call the run parks on, addToolOutput's answer resumes it, the model answers", async () => {
    const ai = await projectAi();
    const thread = 'chat-where';
    const sent: { messages: UIMessage[] }[] = [];
    const streams: string[] = [];
    const calls: { toolName: string; toolCallId: string; input: unknown }[] = [];
    const tapped: typeof fetch = async (input, init) => {
      sent.push(JSON.parse(String(init?.body)) as { messages: UIMessage[] });
      const res = await fetch(input, init);
      streams.push(await res.clone().text());
      return res;
    };
    class Chat extends ai.AbstractChat<UIMessage> {
      constructor() {
        super({
          id: thread,
          transport: new ai.DefaultChatTransport<UIMessage>({ api: `${url}/v1/ai-sdk/chat`, body: { agentId: 'guide' }, fetch: tapped }),
          state: new State(),
          sendAutomaticallyWhen: ai.lastAssistantMessageIsCompleteWithToolCalls,
          onToolCall: ({ toolCall }) => {
            calls.push({ toolName: toolCall.toolName, toolCallId: toolCall.toolCallId, input: toolCall.input });
            void this.addToolOutput({ tool: 'get_location' as never, toolCallId: toolCall.toolCallId, output: { city: 'Bergen' } as never });
          },
        });
      }
    }
    const chat = new Chat();
    await chat.sendMessage({ text: 'where am I?' });
    // Settled: the call's answer sent by the chat itself, and what the run said next streamed back.
    await expect
      .poll(() => ({ status: chat.status, error: chat.error?.message, requests: sent.length, answered: streams.length }), { timeout: 10_000 })
      .toEqual({ status: 'ready', error: undefined, requests: 2, answered: 2 });

    const answered = {
      type: 'tool-get_location',
      toolCallId: 'call_where',
      state: 'output-available',
      input: { precision: 'city' },
      output: { city: 'Bergen' },
    };
    // The first stream parked on the call: the client was asked to run it, and the run said so.
    expect(calls).toEqual([{ toolName: 'get_location', toolCallId: 'call_where', input: { precision: 'city' } }]);
    expect(streams[0]).toContain('"finishReason":"tool-calls"');
    // The second request carries the call answered, as useChat sends it.
    expect(sent[1]?.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(sent[1]?.messages[1]?.parts.filter((p) => p.type === 'tool-get_location')).toEqual([answered]);
    // What the user sees: their message, then one answer with the call and what the model said of its result.
    expect(chat.messages.map((m) => ({ role: m.role, parts: m.parts.filter((p) => !p.type.startsWith('data-') && p.type !== 'step-start') }))).toEqual([
      { role: 'user', parts: [{ type: 'text', text: 'where am I?' }] },
      {
        role: 'assistant',
        parts: [{ type: 'text', text: 'Let me look.', state: 'done' }, answered, { type: 'text', text: 'You are in Bergen.', state: 'done' }],
      },
    ]);
    expect(await history(thread)).toEqual([
      { role: 'user', text: 'where am I?' },
      { role: 'assistant', text: 'Let me look.', tool_calls: [{ id: 'call_where', name: 'get_location', arguments: { precision: 'city' } }] },
      { role: 'tool', text: '{"city":"Bergen"}', tool_call_id: 'call_where' },
      { role: 'assistant', text: 'You are in Bergen.' },
    ]);
    // One run, parked and resumed under its id.
    expect(await runsOf(thread)).toEqual(['done']);
  });

  it('AG-UI: the tool RunAgentInput declares is called, the run ends for the page to run it, and its tool message in the next run resumes it', async () => {
    const thread = 'page-paint';
    const tools = [
      {
        name: 'pick_color',
        description: 'Asks the user to pick a colour in the page',
        parameters: { type: 'object', properties: { palette: { type: 'string' } } },
      },
    ];
    const runAgent = async (runId: string, messages: object[]): Promise<AgUiEvent[]> => {
      const res = await fetch(`${url}/v1/ag-ui/agents/painter/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ threadId: thread, runId, messages, tools, state: {}, context: [], forwardedProps: {} }),
      });
      expect(res.status).toBe(200);
      return (await res.text())
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => JSON.parse(l.slice(6)) as AgUiEvent);
    };
    const user = { id: 'u1', role: 'user', content: 'paint it' };

    const first = await runAgent('page-run-1', [user]);
    expect(first.map((e) => e.type).filter((t) => t !== 'STATE_SNAPSHOT')).toEqual([
      'RUN_STARTED',
      'STEP_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'STEP_FINISHED',
      'MESSAGES_SNAPSHOT',
      'RUN_FINISHED',
    ]);
    const start = first.find((e) => e.type === 'TOOL_CALL_START');
    expect(start).toMatchObject({ toolCallId: 'call_pick', toolCallName: 'pick_color' });
    expect(first.find((e) => e.type === 'TOOL_CALL_ARGS')?.['delta']).toBe('{"palette":"warm"}');
    // Not an interrupt: the page's own tool, which it runs now that the run has finished.
    expect(first.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });

    // The page's history as an AG-UI client keeps it: the thread the run ended with (its snapshot: the
    // user's message, the call under the message the thread keeps it in), then the page's result.
    const aligned = first.find((e) => e.type === 'MESSAGES_SNAPSHOT')?.['messages'] as { id: string; role: string }[];
    expect(aligned.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(aligned[1]).toMatchObject({
      role: 'assistant',
      toolCalls: [{ id: 'call_pick', type: 'function', function: { name: 'pick_color', arguments: '{"palette":"warm"}' } }],
    });
    const second = await runAgent('page-run-2', [
      ...aligned,
      { id: 'tool-call_pick', role: 'tool', toolCallId: 'call_pick', content: JSON.stringify({ color: 'red' }) },
    ]);
    expect(
      second
        .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
        .map((e) => e['delta'])
        .join(''),
    ).toBe('Painting it red.');
    expect(second.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    expect(await history(thread)).toEqual([
      { role: 'user', text: 'paint it' },
      { role: 'assistant', text: '', tool_calls: [{ id: 'call_pick', name: 'pick_color', arguments: { palette: 'warm' } }] },
      { role: 'tool', text: '{"color":"red"}', tool_call_id: 'call_pick' },
      { role: 'assistant', text: 'Painting it red.' },
    ]);
    expect(await runsOf(thread)).toEqual(['done']);
  });
});
