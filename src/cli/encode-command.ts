import { AgentEventSchema, type AgentEvent } from '../contract/event.ts';
import { decodeWire } from '../contract/wire.ts';
import { encodeA2a, frameA2a } from '../protocols/a2a/encoder.ts';
import { encodeAcp, frameAcp } from '../protocols/acp/encoder.ts';
import { encodeAgUi, frameAgUi } from '../protocols/ag-ui/encoder.ts';
import { encodeAiSdk, frameAiSdk } from '../protocols/ai-sdk-v6/encoder.ts';
import { encodeMcp, frameMcp } from '../protocols/mcp/encoder.ts';
import { choiceOf, CliFailure, runCli, UsageError, type CommandSpec, type Io } from './args.ts';
import { EXIT } from './exit.ts';
import { ENCODE_USAGE } from './usages.ts';

export { ENCODE_USAGE };

/** The encoders: events → the bytes the server sends for that run. */
export const ENCODERS: Readonly<Partial<Record<string, (events: readonly AgentEvent[]) => string>>> = {
  'ai-sdk-v6': (events) => frameAiSdk(encodeAiSdk(events)),
  'ag-ui': (events) => frameAgUi(encodeAgUi(events)),
  mcp: (events) => frameMcp(encodeMcp(events)),
  acp: (events) => frameAcp(encodeAcp(events)),
  a2a: (events) => frameA2a(encodeA2a(events)),
};

/** Parses event lines; a bad line is reported with its number and the issue. */
export function parseEventLines(text: string): { events: AgentEvent[] } | { error: string } {
  const events: AgentEvent[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.trim() === '') continue;
    const r = decodeWire(AgentEventSchema, line);
    if (!r.ok) {
      const why =
        r.error.code === 'invalid_json' ? r.error.message : r.error.issues.map((x) => `${x.path === '' ? '(event)' : x.path}: ${x.message}`).join('; ');
      return { error: `line ${i + 1}: ${why}` };
    }
    events.push(r.value as AgentEvent);
  }
  return { events };
}

export const ENCODE_COMMAND: CommandSpec = { command: 'encode', usage: ENCODE_USAGE, options: { protocol: { type: 'string' } } };

/** `awaken encode --protocol P`: AgentEvent JSONL on stdin → the protocol's wire bytes on stdout. */
export async function encodeCommand(argv: readonly string[], io: Io, stdin: () => Promise<string>): Promise<number> {
  return runCli(ENCODE_COMMAND, argv, io, async (args) => {
    const protocol = choiceOf(args, 'protocol', Object.keys(ENCODERS));
    if (protocol === undefined) throw new UsageError(`--protocol is required (${Object.keys(ENCODERS).join(', ')})`);
    const parsed = parseEventLines(await stdin());
    if ('error' in parsed) throw new CliFailure(parsed.error, EXIT.data);
    io.out((ENCODERS[protocol] as (events: readonly AgentEvent[]) => string)(parsed.events));
    return EXIT.ok;
  });
}
