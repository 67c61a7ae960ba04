import { asSchema, parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema, validateUIMessages, type UIMessage, type UIMessageChunk } from 'ai';

/**
 * The official judge of the AI SDK v6 UI message stream (conformance-plan §2): every `data:` frame
 * through `uiMessageChunkSchema`, the whole body through `parseJsonEventStream` and
 * `readUIMessageStream({terminateOnError: true})`, the final message through `validateUIMessages`.
 * Its blind spots are checked here too: the `[DONE]` ending and nothing after a terminal chunk
 * but a new `start` (after an `error`, only `finish-step` and `finish`).
 */
export interface Verdict {
  readonly chunks: UIMessageChunk[];
  readonly message: UIMessage | undefined;
  readonly streamError: string | undefined;
  readonly problems: string[];
}

export async function judgeAiSdk(body: string): Promise<Verdict> {
  const problems: string[] = [];
  const frames = body.split('\n\n').filter((f) => f !== '');
  if (frames.at(-1) !== 'data: [DONE]') problems.push('the body does not end with data: [DONE]');
  const datas = frames.filter((f) => f !== 'data: [DONE]');
  const schema = asSchema(uiMessageChunkSchema);
  const chunks: UIMessageChunk[] = [];
  for (const f of datas) {
    if (!f.startsWith('data: ')) {
      problems.push(`not a data frame: ${f.slice(0, 40)}`);
      continue;
    }
    const value: unknown = JSON.parse(f.slice(6));
    const r = await schema.validate!(value);
    if (!r.success) problems.push(`schema rejects ${f.slice(6, 120)}: ${String(r.error).slice(0, 200)}`);
    else chunks.push(r.value);
  }
  // Nothing after a terminal chunk but a new run (`start`). The terminal chunk is `finish`; an
  // `error` is followed by nothing but `finish-step` and `finish` (as `streamText` sends them), or
  // ends the segment itself.
  let terminal = false;
  let errored = false;
  let terminals = 0;
  for (const c of chunks) {
    if (terminal && c.type !== 'start') problems.push(`${c.type} after the terminal chunk`);
    else if (errored && c.type !== 'start' && c.type !== 'finish-step' && c.type !== 'finish') problems.push(`${c.type} after an error chunk`);
    if (c.type === 'start') {
      if (errored && !terminal) terminals++;
      terminal = false;
      errored = false;
    }
    if (c.type === 'error') errored = true;
    if (c.type === 'finish') {
      terminal = true;
      terminals++;
    }
  }
  if (errored && !terminal) terminals++;
  if (terminals === 0) problems.push('no terminal chunk');
  const starts = chunks.filter((c) => c.type === 'start').length;
  if (terminals !== starts) problems.push(`${starts} start chunk(s) but ${terminals} terminal chunk(s)`);

  const stream = parseJsonEventStream({ stream: new Blob([body]).stream(), schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({
      transform(r, controller) {
        if (!r.success) throw r.error;
        controller.enqueue(r.value);
      },
    }),
  );
  let message: UIMessage | undefined;
  let streamError: string | undefined;
  try {
    for await (const m of readUIMessageStream({ stream, terminateOnError: true })) message = m;
  } catch (e) {
    streamError = e instanceof Error ? e.message : String(e);
  }
  if (message !== undefined) {
    try {
      // The client answers an approval request itself (addToolApprovalResponse) before the stream
      // goes on; a stream replayed alone lacks that step, so the judge plays the client's part.
      const answered = {
        ...message,
        parts: message.parts.map((p) => {
          const part = p as { state?: string; approval?: { id: string; approved?: boolean } };
          if (part.approval === undefined || part.approval.approved !== undefined || part.state === 'approval-requested') return p;
          return { ...p, approval: { ...part.approval, approved: part.state !== 'output-denied' } } as typeof p;
        }),
      };
      await validateUIMessages({ messages: [answered] });
    } catch (e) {
      problems.push(`validateUIMessages: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return { chunks, message, streamError, problems };
}
