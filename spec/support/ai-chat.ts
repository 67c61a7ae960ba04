import { AbstractChat, lastAssistantMessageIsCompleteWithApprovalResponses, type ChatTransport, type UIMessage } from 'ai';
import { State } from '../../src/protocols/ai-sdk-v6/drive.ts';

/** The headless chat state a UI framework would provide to `AbstractChat` (the judge's driver keeps the same). */
export { State };

/** The official AI SDK chat without a UI: sends again on its own once every approval is answered. */
export class HeadlessChat extends AbstractChat<UIMessage> {
  constructor(id: string, transport: ChatTransport<UIMessage>) {
    super({ id, transport, state: new State(), sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
  }
}
