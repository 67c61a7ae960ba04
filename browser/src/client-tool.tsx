import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls } from 'ai';
import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import { API, THREAD } from './api.ts';

/**
 * `useChat` with a tool the page runs: the server's app declares `get_location` without `execute`,
 * the model calls it, `onToolCall` answers with `addToolOutput`, and `sendAutomaticallyWhen` sends
 * the answer back so the run goes on (docs/server.md → Client tools, state and context).
 */
function Chat() {
  const [asked, setAsked] = useState(0);
  const { messages, sendMessage, addToolOutput, status, error } = useChat({
    id: THREAD,
    transport: new DefaultChatTransport({ api: `${API}/v1/ai-sdk/chat` }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
    onToolCall: ({ toolCall }) => {
      if (toolCall.dynamic || toolCall.toolName !== 'get_location') return;
      setAsked((n) => n + 1);
      // Not awaited: awaiting inside onToolCall would wait on the stream that is calling it.
      void addToolOutput({ tool: 'get_location', toolCallId: toolCall.toolCallId, output: { city: 'Bergen' } });
    },
  });
  const [input, setInput] = useState('');
  return (
    <main>
      <ol id="messages">
        {messages.map((m) => (
          <li key={m.id} data-role={m.role}>
            {m.parts.map((p, i) =>
              p.type === 'text' ? (
                // biome-ignore lint/suspicious/noArrayIndexKey: a message's parts carry no id and are only ever appended
                <p key={i} className="text">
                  {p.text}
                </p>
              ) : p.type.startsWith('tool-') ? (
                // biome-ignore lint/suspicious/noArrayIndexKey: as above
                <p key={i} className="tool" data-tool={p.type.slice('tool-'.length)} data-state={(p as { state: string }).state} />
              ) : null,
            )}
          </li>
        ))}
      </ol>
      <p id="asked">asked {asked}</p>
      {error !== undefined && (
        <p id="error" role="alert">
          {error.message}
        </p>
      )}
      <form
        id="composer"
        onSubmit={(e) => {
          e.preventDefault();
          void sendMessage({ text: input });
          setInput('');
        }}
      >
        <input id="input" value={input} onChange={(e) => setInput(e.target.value)} placeholder="Message" autoComplete="off" />
        <button id="send" type="submit" disabled={status !== 'ready' && status !== 'error'}>
          Send
        </button>
      </form>
      <p id="status">{status}</p>
    </main>
  );
}

createRoot(document.getElementById('root') as HTMLElement).render(<Chat />);
