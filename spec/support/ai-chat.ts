import { AbstractChat, lastAssistantMessageIsCompleteWithApprovalResponses, type ChatState, type ChatStatus, type ChatTransport, type UIMessage } from 'ai';

/** The headless chat state a UI framework would provide to `AbstractChat` (React's `useChat` keeps the same). */
export class State implements ChatState<UIMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  messages: UIMessage[] = [];
  pushMessage = (m: UIMessage): void => void (this.messages = [...this.messages, m]);
  popMessage = (): void => void (this.messages = this.messages.slice(0, -1));
  replaceMessage = (i: number, m: UIMessage): void => void (this.messages = this.messages.map((x, j) => (j === i ? m : x)));
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

/** The official AI SDK chat without a UI: sends again on its own once every approval is answered. */
export class HeadlessChat extends AbstractChat<UIMessage> {
  constructor(id: string, transport: ChatTransport<UIMessage>) {
    super({ id, transport, state: new State(), sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
  }
}
