import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe, type ServeProcess } from '../support/serve-process.ts';
import { parseSse } from '../support/server.ts';

/**
 * A file-backed model served by `awaken serve` runs its script from the start in each thread
 * (docs/scripted-models.md): two threads whose clients happen to send the same message id each get
 * their own script, and a message a plugin places at the head of the conversation (a state-machine
 * emit with `target: conversation`) does not make the thread's script start over or skip a step.
 */

let server: ServeProcess;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-scripted-threads-'));
  writeFileSync(
    join(dir, 'reader.yaml'),
    ['- tool_calls: [{ id: call_read, name: Read, arguments: { file_path: notes.txt } }]', '- text: step two', '- text: step three', '- text: step four'].join(
      '\n',
    ),
  );
  writeFileSync(
    join(dir, 'awaken.yaml'),
    [
      'server:',
      '  store: memory',
      `  model: "scripted:${join(dir, 'reader.yaml')}"`,
      'agents:',
      '  - id: reader',
      '    model: demo',
      '    system_prompt: Read before answering.',
      '    allowed_tools: [Read]',
      '    plugin_ids: [state_machine]',
      '    sections:',
      '      state_machine:',
      '        machines:',
      '          - name: remind-after-read',
      '            key: "{file_path}"',
      '            initial: unread',
      '            transitions:',
      '              - on: \'Read(file_path ~ "*")\'',
      '                from: [unread, read]',
      '                to: read',
      '                when: any',
      '                emit: { target: conversation, role: user, content: "You read {file_path}." }',
    ].join('\n'),
  );
  server = await startServe(['--config', join(dir, 'awaken.yaml')]);
});
afterAll(async () => {
  await server.stop();
});

interface Ran {
  readonly status: number;
  readonly texts: string;
  readonly calls: readonly string[];
  readonly termination: unknown;
}

/** One run over the socket: its answer's text, the tools it called and how it ended. */
async function run(body: Record<string, unknown>): Promise<Ran> {
  const response = await fetch(`${server.url}/v1/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (response.status !== 200) return { status: response.status, texts: await response.text(), calls: [], termination: undefined };
  const events = parseSse(await response.text()).map((f) => JSON.parse(f.data) as Record<string, unknown>);
  return {
    status: response.status,
    texts: events.flatMap((e) => (e['event_type'] === 'text_delta' ? [e['delta'] as string] : [])).join(''),
    calls: events.flatMap((e) => (e['event_type'] === 'tool_call_start' ? [e['name'] as string] : [])),
    termination: events.find((e) => e['event_type'] === 'run_finish')?.['termination'],
  };
}

const message = (id: string, text: string) => ({ id, role: 'user', content: [{ type: 'text', text }] });

describe('awaken serve --model scripted:FILE runs the script from its start in each thread', () => {
  it('two threads sending the same message id each run the whole script', async () => {
    const natural = { type: 'natural_end' };
    const first = await run({ agentId: 'demo', threadId: 'thread-a', messages: [message('m-1', 'hello')] });
    const second = await run({ agentId: 'demo', threadId: 'thread-b', messages: [message('m-1', 'hello')] });
    expect(first).toEqual({ status: 200, texts: 'step two', calls: ['Read'], termination: natural });
    expect(second).toEqual({ status: 200, texts: 'step two', calls: ['Read'], termination: natural });
    // Each thread goes on with its own next step.
    expect(await run({ agentId: 'demo', threadId: 'thread-b', messages: [message('m-2', 'and then?')] })).toEqual({
      status: 200,
      texts: 'step three',
      calls: [],
      termination: natural,
    });
    expect(await run({ agentId: 'demo', threadId: 'thread-a', messages: [message('m-3', 'and then?')] })).toEqual({
      status: 200,
      texts: 'step three',
      calls: [],
      termination: natural,
    });
  });

  it('a message a plugin places at the head of the conversation neither restarts the script nor skips a step', async () => {
    const natural = { type: 'natural_end' };
    // The Read fires the machine's emit: the next inference carries "You read notes.txt." first.
    expect(await run({ agentId: 'reader', threadId: 'thread-r', messages: [message('r-1', 'read the notes')] })).toEqual({
      status: 200,
      texts: 'step two',
      calls: ['Read'],
      termination: natural,
    });
    expect(await run({ agentId: 'reader', threadId: 'thread-r', messages: [message('r-2', 'and then?')] })).toEqual({
      status: 200,
      texts: 'step three',
      calls: [],
      termination: natural,
    });
    expect(await run({ agentId: 'reader', threadId: 'thread-r', messages: [message('r-3', 'and then?')] })).toEqual({
      status: 200,
      texts: 'step four',
      calls: [],
      termination: natural,
    });
  });
});
