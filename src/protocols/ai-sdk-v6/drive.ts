import { randomUUID } from 'node:crypto';
import { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, type ChatState, type ChatStatus, type UIMessage } from 'ai';
import { tappedFetch, type Capture, type Scenario } from '../findings.ts';

/** The chat state a UI framework would give `AbstractChat` (React's `useChat` keeps the same). */
export class State implements ChatState<UIMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  messages: UIMessage[] = [];
  pushMessage = (m: UIMessage): void => void (this.messages = [...this.messages, m]);
  popMessage = (): void => void (this.messages = this.messages.slice(0, -1));
  replaceMessage = (i: number, m: UIMessage): void => void (this.messages = this.messages.map((x, j) => (j === i ? m : x)));
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

class Chat extends AbstractChat<UIMessage> {
  constructor(api: string, fetch: typeof globalThis.fetch) {
    super({
      id: `judge-${randomUUID()}`,
      transport: new DefaultChatTransport<UIMessage>({ api, fetch }),
      state: new State(),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
  }
}

const settled = async (chat: Chat): Promise<void> => {
  while (chat.status === 'submitted' || chat.status === 'streaming') await new Promise((r) => setTimeout(r, 10));
};

/**
 * The scenario through the AI SDK's own chat (`AbstractChat` + `DefaultChatTransport`, the state
 * machine under `useChat`) against a chat endpoint: the message, then the second message; the first
 * approval asked for is answered with `addToolApprovalResponse` (the chat sends again on its own).
 */
export async function driveAiSdk(s: Scenario): Promise<Capture> {
  const bodies: Promise<string>[] = [];
  const chat = new Chat(s.url, tappedFetch(bodies, s.headers));
  const fail = (): void => {
    if (chat.error !== undefined && bodies.length === 0) throw chat.error;
  };
  let answered = false;
  let asked = false;
  for (const text of [s.message, ...(s.then !== undefined ? [s.then] : [])]) {
    await chat.sendMessage({ text });
    await settled(chat);
    fail();
    const ask = chat.lastMessage?.parts.find((p) => (p as { state?: string }).state === 'approval-requested') as { approval?: { id: string } } | undefined;
    asked ||= ask?.approval !== undefined;
    if (s.decision !== undefined && !answered && ask?.approval !== undefined) {
      answered = true;
      await chat.addToolApprovalResponse({
        id: ask.approval.id,
        approved: s.decision === 'approve',
        ...(s.decision === 'deny' ? { reason: 'denied by awaken judge' } : {}),
      });
      await settled(chat);
    }
  }
  return { bodies: await Promise.all(bodies), asked };
}
