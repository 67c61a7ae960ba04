import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parseScript, ScriptedLlm } from '../providers/scripted.ts';
import { TranscriptLlm } from '../providers/transcript-llm.ts';
import { readTranscript } from '../replay/transcript.ts';
import type { LlmExecutor } from '../runtime/llm.ts';

export const RUN_USAGE = `usage: awaken run --model scripted:FILE|transcript:FILE [--agent demo] [--format jsonl|pretty] [--decide approve|deny] "message"

  --model scripted:FILE     a scripted model (JSON or YAML steps; docs/scripted-models.md)
  --model transcript:FILE   the model answers of a recorded transcript, in order (docs/transcript-format.md)
  --agent ID                the agent to run (default: demo)
  --format jsonl|pretty     one canonical AgentEvent per line (default), or readable lines
  --decide approve|deny     answer every suspended tool call; without it a suspension ends the run
`;

/** What `awaken run` (and `awaken record`) is asked to do. */
export interface RunPlan {
  readonly model: string;
  readonly agent: string;
  readonly format: 'jsonl' | 'pretty';
  readonly decide: 'approve' | 'deny' | undefined;
  readonly message: string;
}

export function parseRunArgs(argv: readonly string[]): RunPlan | string {
  const args: { model?: string; agent: string; format: 'jsonl' | 'pretty'; decide?: 'approve' | 'deny' } = { agent: 'demo', format: 'jsonl' };
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const value = (): string | undefined => argv[++i];
    switch (a) {
      case '--model':
      case '--agent': {
        const v = value();
        if (v === undefined) return `${a} needs a value`;
        if (a === '--model') args.model = v;
        else args.agent = v;
        break;
      }
      case '--format': {
        const f = value();
        if (f !== 'jsonl' && f !== 'pretty') return `--format must be jsonl or pretty, not '${f ?? ''}'`;
        args.format = f;
        break;
      }
      case '--decide': {
        const d = value();
        if (d !== 'approve' && d !== 'deny') return `--decide must be approve or deny, not '${d ?? ''}'`;
        args.decide = d;
        break;
      }
      default:
        if (a.startsWith('--')) return `unknown option ${a}`;
        rest.push(a);
    }
  }
  if (args.model === undefined) return '--model is required';
  if (rest.length !== 1) return 'exactly one message is required';
  return { model: args.model, agent: args.agent, format: args.format, decide: args.decide, message: rest[0] as string };
}

/** The model a `--model` value names, or why it cannot be had. Only file-backed models exist offline. */
export function modelOf(model: string): LlmExecutor | string {
  const [kind, ...pathParts] = model.split(':');
  const file = pathParts.join(':');
  if ((kind !== 'scripted' && kind !== 'transcript') || file === '') {
    return `only scripted:FILE and transcript:FILE models are available here, not '${model}'`;
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    return `cannot read ${file}: ${e instanceof Error ? e.message : String(e)}`;
  }
  if (kind === 'scripted') {
    try {
      return new ScriptedLlm(parseScript(text, extname(file) === '.json' ? 'json' : 'yaml'));
    } catch (e) {
      return `cannot read script ${file}: ${e instanceof Error ? e.message : String(e)}`;
    }
  }
  const inferences = readTranscript(text).flatMap((l) =>
    l.ok && l.record.type === 'llm' ? [{ parts: l.record.parts, ...(l.record.error !== undefined ? { error: l.record.error } : {}) }] : [],
  );
  if (inferences.length === 0) return `${file} holds no recorded inference`;
  return new TranscriptLlm(inferences as never);
}
