import { readFileSync } from 'node:fs';
import { durationOf, timelineOf, transcriptRecords, type Timeline, type TimelineToolCall } from '../replay/timeline.ts';
import { whereInEvents } from '../replay/side-by-side.ts';
import { CliFailure, runCli, type CommandSpec, type Io } from './args.ts';
import { cannotRead } from './cannot-read.ts';
import { EXIT } from './exit.ts';
import { INSPECT_USAGE } from './usages.ts';

export { INSPECT_USAGE };

export const INSPECT_COMMAND: CommandSpec = {
  command: 'inspect',
  usage: INSPECT_USAGE,
  options: { json: { type: 'boolean' }, state: { type: 'boolean' } },
  positionals: { min: 1, max: 1, name: 'a transcript FILE' },
};

/** `awaken inspect FILE.jsonl [--json] [--state]`. */
export async function inspectCommand(argv: readonly string[], io: Io): Promise<number> {
  return runCli(INSPECT_COMMAND, argv, io, async (args) => {
    const file = args.positionals[0] as string;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw cannotRead(file, e);
    }
    const timeline = timelineOf(transcriptRecords(text));
    if (timeline.events === 0) throw new CliFailure(`${file}: no events: not a transcript (docs/transcript-format.md)`, EXIT.data);
    io.out(args.values['json'] === true ? `${JSON.stringify(timeline, null, 2)}\n` : renderTimeline(timeline, { state: args.values['state'] === true }));
    return EXIT.ok;
  });
}

const clip = (s: string, n = 100): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const json = (v: unknown): string => clip(JSON.stringify(v) ?? 'undefined');
const ms = (n: number | undefined): string => (n === undefined ? '' : `${n} ms`);

/** The timeline as text, for a terminal. */
export function renderTimeline(t: Timeline, options: { readonly state?: boolean } = {}): string {
  const lines: string[] = [];
  const start = t.started_at;
  const at = (time: number | undefined): string => (time === undefined || start === undefined ? '' : `+${time - start} ms`);
  const ids = [
    `run ${t.run_id ?? '?'}`,
    `thread ${t.thread_id ?? '?'}`,
    ...(t.agent_id !== undefined ? [`agent ${t.agent_id}`] : []),
    ...(t.app !== undefined ? [`app ${t.app.file} (${t.app.version})`] : []),
    ...(t.resumed === true ? [`segment ${t.segment ?? 1}, taken up again from the store`] : t.segment !== undefined ? [`segment ${t.segment}`] : []),
    ...(t.parent_run_id !== undefined ? [`delegated by ${t.parent_run_id}`] : []),
  ];
  lines.push(ids.join(' · '));
  const termination = t.termination === undefined ? (t.finished ? 'finished' : 'not finished (no run_finish)') : json(t.termination);
  const totals = [
    `${t.step_count} step${t.step_count === 1 ? '' : 's'}`,
    ms(durationOf(t.started_at, t.ended_at)),
    `tokens ${t.usage.input} in, ${t.usage.output} out, ${t.usage.total} total`,
  ].filter((x) => x !== '');
  lines.push(`  ${termination} · ${totals.join(' · ')}`);
  if (t.response !== undefined) lines.push(`  answer: ${json(t.response)}`);
  if (t.cancelled_after_event !== undefined) lines.push(`  cancelled ${whereInEvents(t.cancelled_after_event)}`);
  for (const step of t.steps) {
    lines.push('');
    lines.push(`step ${step.index}${step.message_id === '' ? ' (outside a step)' : ''}  ${at(step.started_at)}`.trimEnd());
    const inf = step.inference;
    if (inf.model !== undefined || inf.requests.length > 0 || inf.text !== '') {
      const usage = inf.usage as { prompt_tokens?: number; completion_tokens?: number } | undefined;
      const request = inf.requests.at(-1);
      const parts = [
        inf.model ?? request?.model ?? '',
        ms(inf.duration_ms),
        usage !== undefined ? `tokens ${usage.prompt_tokens ?? '?'} → ${usage.completion_tokens ?? '?'}` : '',
        request !== undefined
          ? `(request: ${request.messages.length} messages, ${request.tools.length} tools${inf.requests.length > 1 ? `, ${inf.requests.length} attempts` : ''})`
          : '',
      ].filter((x) => x !== '');
      lines.push(`  inference  ${parts.join('  ')}`);
      for (const r of inf.requests) if (r.error !== undefined) lines.push(`    failed     ${json(r.error)}`);
      if (inf.reasoning !== '') lines.push(`    reasoning  ${json(inf.reasoning)}`);
      if (inf.text !== '') lines.push(`    text       ${json(inf.text)}`);
    }
    for (const a of step.activities) lines.push(`  activity  ${a.type}  ${json(a.content)}`);
    for (const call of step.tools) lines.push(...toolLines(call));
    for (const e of step.errors) lines.push(`  error  ${e}`);
    if (step.state !== undefined) {
      const p = step.state.patch;
      lines.push(`  state  revision ${step.state.revision ?? '?'}: ${p.length} change${p.length === 1 ? '' : 's'}`);
      if (options.state === true)
        for (const op of p) lines.push(`    ${op.op === 'add' ? '+' : op.op === 'remove' ? '-' : '~'} ${op.path}${'value' in op ? `  ${json(op.value)}` : ''}`);
    }
  }
  for (const d of t.decisions) lines.push('', `decision ${whereInEvents(d.after_event)}: ${json(d.decisions)}`);
  return `${lines.join('\n')}\n`;
}

function toolLines(call: TimelineToolCall): string[] {
  const head = [
    `  tool  ${call.name} [${call.call_id}]`,
    ms(durationOf(call.started_at, call.ended_at)),
    call.outcome ?? 'not finished',
    call.resumed === true ? '(resumed)' : '',
  ].filter((x) => x !== '');
  const out = [head.join('  ')];
  out.push(`    arguments  ${json(call.arguments)}`);
  if (call.progress.length > 0)
    out.push(
      `    progress   ${call.progress.map((p) => [p.status, p.message, p.progress !== undefined ? `${Math.round(p.progress * 100)}%` : undefined].filter((x) => x !== undefined).join(' ')).join(' · ')}`,
    );
  for (const a of call.activity) out.push(`    activity   ${a.type}  ${json(a.content)}`);
  if (call.stream !== '') out.push(`    output     ${json(call.stream)}`);
  if (call.suspension !== undefined) out.push(`    suspended  ${json(call.suspension)}`);
  if (call.decision !== undefined) out.push(`    decision   ${json(call.decision)}`);
  if (call.failure !== undefined) out.push(`    failed     ${call.failure}`);
  const result = call.result as { status?: string; data?: unknown; message?: string | null } | undefined;
  if (result !== undefined)
    out.push(
      `    result     ${result.status === 'error' ? `error: ${result.message ?? ''}` : result.status === 'pending' ? 'pending (suspended)' : json(result.data ?? null)}`,
    );
  if (call.resumed_result !== undefined) out.push(`    resumed    ${json(call.resumed_result)}`);
  return out;
}
