import { CopilotChat, CopilotKitProvider, useAgent, useDefaultRenderTool, useFrontendTool, useInterrupt, useThreads } from '@copilotkit/react-core/v2';
import '@copilotkit/react-core/v2/styles.css';
import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import { z } from 'zod';
import { API, THREAD } from './api.ts';

/**
 * CopilotKit's React front end (`@copilotkit/react-core/v2`) pointed straight at `awaken serve`'s
 * CopilotKit routes, no CopilotKit runtime between: a tool the page runs (`set_theme`), the agent's
 * shared state shown and edited here (`todos`), an interrupt answered with a button, and the
 * agent's threads listed and renamed (`useThreads`).
 */
const AGENT = 'kit';

function Page() {
  const [theme, setTheme] = useState('none');
  const { agent } = useAgent({ agentId: AGENT });
  const todos = ((agent.state as { todos?: unknown } | undefined)?.todos ?? []) as string[];

  // Every tool call the agent makes shows in the chat as CopilotKit's own card.
  useDefaultRenderTool();

  useFrontendTool({
    name: 'set_theme',
    description: 'Paints the page',
    agentId: AGENT,
    parameters: z.object({ color: z.string() }),
    handler: async ({ color }) => {
      setTheme(color);
      return { applied: color };
    },
  });

  useInterrupt({
    agentId: AGENT,
    render: ({ event, resolve }) => (
      <div className="interrupt">
        <span className="reason">{JSON.stringify(event.value)}</span>
        <button type="button" onClick={() => resolve({ approved: true })}>
          Approve
        </button>
      </div>
    ),
  });

  const { threads, renameThread } = useThreads({ agentId: AGENT });

  return (
    <main data-theme={theme}>
      <ul className="threads">
        {threads.map((t) => (
          <li key={t.id} data-thread={t.id}>
            {t.name ?? t.id}
            <button type="button" onClick={() => void renameThread(t.id, 'Groceries and branches')}>
              Rename
            </button>
          </li>
        ))}
      </ul>
      <p className="theme">theme: {theme}</p>
      <ul className="todos">
        {todos.map((t) => (
          <li key={t}>{t}</li>
        ))}
      </ul>
      <button type="button" className="add-bread" onClick={() => agent.setState({ ...(agent.state ?? {}), todos: [...todos, 'bread'] })}>
        Add bread here
      </button>
      <CopilotChat agentId={AGENT} threadId={THREAD} />
    </main>
  );
}

createRoot(document.getElementById('root') as HTMLElement).render(
  <CopilotKitProvider runtimeUrl={`${API}/v1/copilotkit`} enableInspector={false} showDevConsole={false}>
    <Page />
  </CopilotKitProvider>,
);
