import { buildResumeArray, HttpAgent, type Message } from '@ag-ui/client';
import { API, THREAD } from './api.ts';

// The README's AG-UI snippet: an HttpAgent on awaken's AG-UI route, one thread.
const agent = new HttpAgent({ url: `${API}/v1/ag-ui/run`, threadId: THREAD });

const $ = (id: string): HTMLElement => document.getElementById(id) as HTMLElement;
let runs = 0;

function render(): void {
  const list = $('messages');
  list.replaceChildren(
    ...agent.messages.map((m: Message) => {
      const li = document.createElement('li');
      li.dataset['role'] = m.role;
      if (typeof m.content === 'string' && m.content !== '') {
        const p = document.createElement('p');
        p.className = m.role === 'reasoning' ? 'reasoning' : 'text';
        p.textContent = m.content;
        li.append(p);
      }
      // A tool call renders under its tool's name.
      for (const call of 'toolCalls' in m ? (m.toolCalls ?? []) : []) {
        const div = document.createElement('div');
        div.className = 'tool';
        div.dataset['tool'] = call.function.name;
        div.dataset['callId'] = call.id;
        div.textContent = `${call.function.name} ${call.function.arguments}`;
        li.append(div);
      }
      return li;
    }),
  );
  const asks = $('interrupts');
  asks.replaceChildren(
    ...agent.pendingInterrupts.map((i) => {
      const div = document.createElement('div');
      div.className = 'interrupt';
      div.dataset['toolCallId'] = i.toolCallId ?? '';
      div.textContent = i.message ?? i.reason;
      for (const [label, approved] of [
        ['Approve', true],
        ['Deny', false],
      ] as const) {
        const b = document.createElement('button');
        b.textContent = label;
        b.onclick = () =>
          void run({
            resume: buildResumeArray(agent.pendingInterrupts, {
              [i.id]: approved ? { status: 'resolved', payload: { approved: true } } : { status: 'cancelled' },
            }),
          });
        div.append(b);
      }
      return div;
    }),
  );
}

async function run(extra: Parameters<HttpAgent['runAgent']>[0] = {}): Promise<void> {
  $('status').textContent = 'streaming';
  $('error').textContent = '';
  try {
    await agent.runAgent({ runId: `browser-run-${++runs}`, ...extra });
  } catch (e) {
    $('error').textContent = e instanceof Error ? e.message : String(e);
  }
  render();
  $('status').textContent = 'ready';
}

agent.subscribe({ onMessagesChanged: () => render() });
$('composer').addEventListener('submit', (e) => {
  e.preventDefault();
  const input = $('input') as HTMLInputElement;
  if (input.value.trim() === '') return;
  agent.messages.push({ id: `u-${Date.now()}`, role: 'user', content: input.value });
  input.value = '';
  render();
  void run();
});
render();
