import { randomUUID } from 'node:crypto';
import { buildResumeArray, HttpAgent } from '@ag-ui/client';
import { DriveFailure, tappedFetch, type Capture, type Scenario } from '../findings.ts';

/**
 * The scenario through `@ag-ui/client`'s `HttpAgent` against a run endpoint: the message, then the
 * second message; the first pending interrupt is resolved with `{approved}` (a resume run). A run that
 * ends in `RUN_ERROR` is still judged: its body is what the server sent.
 */
export async function driveAgUi(s: Scenario): Promise<Capture> {
  const bodies: Promise<string>[] = [];
  const id = randomUUID();
  const agent = new HttpAgent({ url: s.url, threadId: `judge-${id}`, fetch: tappedFetch(bodies, s.headers) });
  let turn = 0;
  const run = async (resume?: ReturnType<typeof buildResumeArray>): Promise<void> => {
    turn++;
    const before = bodies.length;
    const error = console.error;
    console.error = () => undefined;
    try {
      await agent.runAgent({ runId: `judge-${id}-${turn}`, ...(resume !== undefined ? { resume } : {}) });
    } catch (e) {
      if (e instanceof DriveFailure || bodies.length === before) throw e;
    } finally {
      console.error = error;
    }
  };
  let answered = false;
  let asked = false;
  for (const [i, text] of [s.message, ...(s.then !== undefined ? [s.then] : [])].entries()) {
    agent.messages.push({ id: `judge-${id}-u${i + 1}`, role: 'user', content: text });
    await run();
    const interrupt = agent.pendingInterrupts[0];
    asked ||= interrupt !== undefined;
    if (s.decision !== undefined && !answered && interrupt !== undefined) {
      answered = true;
      await run(buildResumeArray(agent.pendingInterrupts, { [interrupt.id]: { status: 'resolved', payload: { approved: s.decision === 'approve' } } }));
    }
  }
  return { bodies: await Promise.all(bodies), asked };
}
