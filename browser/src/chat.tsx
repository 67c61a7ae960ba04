import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from 'ai';
import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import { API, THREAD } from './api.ts';

type ToolPart = { type: string; toolCallId: string; state: string; input?: unknown; output?: unknown; approval?: { id: string } };

function Part({ part, answer }: { part: UIMessage['parts'][number]; answer: (id: string, approved: boolean) => void }) {
  if (part.type === 'text') return <p className="text">{part.text}</p>;
  if (part.type === 'reasoning') return <p className="reasoning">{part.text}</p>;
  if (!part.type.startsWith('tool-')) return null;
  // A tool part renders under its tool's name (the part type is `tool-<name>`).
  const tool = part as ToolPart;
  const name = tool.type.slice('tool-'.length);
  return (
    <div className="tool" data-tool={name} data-state={tool.state}>
      <strong>{name}</strong> <span className="state">{tool.state}</span> <code>{JSON.stringify(tool.input)}</code>
      {tool.state === 'output-available' && <code className="output">{JSON.stringify(tool.output)}</code>}
      {tool.state === 'approval-requested' && tool.approval !== undefined && (
        <>
          <button type="button" onClick={() => answer(tool.approval?.id ?? '', true)}>
            Approve
          </button>
          <button type="button" onClick={() => answer(tool.approval?.id ?? '', false)}>
            Deny
          </button>
        </>
      )}
    </div>
  );
}

function Chat() {
  // The README's AI SDK snippet: useChat with a DefaultChatTransport on awaken's chat route.
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    id: THREAD,
    transport: new DefaultChatTransport({ api: `${API}/v1/ai-sdk/chat` }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState('');
  const answer = (id: string, approved: boolean) => void addToolApprovalResponse({ id, approved });
  return (
    <main>
      <h1>
        AI SDK <code>useChat</code>
      </h1>
      <ol id="messages">
        {messages.map((m) => (
          <li key={m.id} data-role={m.role}>
            {m.parts.map((p, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: a message's parts carry no id and are only ever appended, so the position names a part stably
              <Part key={i} part={p} answer={answer} />
            ))}
          </li>
        ))}
      </ol>
      {error !== undefined && (
        <p id="error" role="alert">
          {error.message}
        </p>
      )}
      <form
        id="composer"
        onSubmit={(e) => {
          e.preventDefault();
          if (input.trim() === '') return;
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
