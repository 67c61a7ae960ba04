import { type Dirent, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { AgentSpec } from '../contract/agent-spec.ts';
import type { AgentEventType } from '../contract/event.ts';
import type { TerminationReason } from '../contract/lifecycle.ts';
import { bracketPath, fieldIssues } from '../contract/issue-line.ts';
import { unreachable } from '../contract/never.ts';
import { whyUnreadable } from '../contract/unreadable.ts';
import type { AppCode } from './plugins.ts';
import { placeIn, renderTable } from './report.ts';
import { replayTranscript, whereInEvents, type PortDivergence, type ReplayReport, type TranscriptPlace } from './replayer.ts';

/*
 * The upgrade gate: a folder of recorded runs replayed against the code of today, each divergence
 * sorted into a class, and a manifest of the divergences a change was meant to make, which turns
 * those green — as a workflow's patch marks the histories it knows it changed (docs/adr/0070).
 */

/** What kind of change a run's first divergence is: the first place it left its recording says what the new code does differently. */
export const DIVERGENCE_CLASSES = ['prompt', 'tool_arguments', 'tool_results', 'state', 'events', 'termination', 'history'] as const;
export type DivergenceClass = (typeof DIVERGENCE_CLASSES)[number];

/**
 * A run the replay could not run at all (it does not read, names code that is not there or cannot
 * be built, or could not start): nothing was compared, so no manifest accepts it.
 */
export const UNREPLAYABLE = 'unreplayable' as const;
/** What the gate says of a run that is not identical: the class of its first divergence, or that it could not be replayed. */
export type RunClass = DivergenceClass | typeof UNREPLAYABLE;

/** One line each, as `--baseline` and the JSON Schema describe them. */
export const DIVERGENCE_CLASS_MEANING: Readonly<Record<DivergenceClass, string>> = {
  prompt: 'what the model is asked: the request of an inference (system prompt, messages, tools offered, model) differs from the recorded one',
  tool_arguments: 'the tool calls: a call with other arguments, or a call the recording never made',
  tool_results: 'what a tool call ended with: its result or outcome as the run tells it',
  state: 'the state: a state snapshot or delta',
  events: 'the other events, the response or the thread the run ended with',
  termination: 'how the run ended: its termination',
  history: 'the rest of the record: clock and id draws, decisions, cancels, records missing, added or out of order, a record that does not read',
};

/** The class of an event: what a difference first seen there changed. */
function classOfEvent(type: AgentEventType): DivergenceClass {
  switch (type) {
    case 'tool_call_start':
    case 'tool_call_delta':
    case 'tool_call_ready':
      return 'tool_arguments';
    case 'tool_call_done':
    case 'tool_call_resumed':
    case 'tool_call_stream_delta':
      return 'tool_results';
    case 'state_snapshot':
    case 'state_delta':
      return 'state';
    case 'run_finish':
      return 'termination';
    case 'run_start':
    case 'step_start':
    case 'step_end':
    case 'inference_complete':
    case 'text_delta':
    case 'reasoning_delta':
    case 'reasoning_encrypted_value':
    case 'activity_snapshot':
    case 'activity_delta':
    case 'messages_snapshot':
    case 'error':
      return 'events';
    default:
      return unreachable(type);
  }
}

const eventTypeOf = (line: string | undefined): AgentEventType | undefined => {
  if (line === undefined) return undefined;
  try {
    const t = (JSON.parse(line) as { event_type?: unknown }).event_type;
    return typeof t === 'string' ? (t as AgentEventType) : undefined;
  } catch {
    return undefined;
  }
};

/**
 * The class of a replay's first divergence; undefined when it replayed identical, `unreplayable`
 * when it could not run. It reads the divergence's `kind`, never its message: one without a kind
 * (an older report's) is classed by its port and the events alone. A record that does not read is
 * the history. A changed request or a call's arguments are told by their kind (the events may agree
 * until later); a stop condition that fires
 * on one side only is `termination`; then the first event that says something else (beyond its
 * ids); then a run that ended otherwise than recorded (`recorded`: the recording's termination) is
 * `termination`, whatever draws or ids it shows first; a draw,
 * decision or cancel that is not the recorded one is the history (what follows is its consequence),
 * and so is an event that differs in its ids alone; otherwise the port that left.
 */
export function classifyDivergence(
  report: Pick<ReplayReport, 'identical' | 'divergence' | 'firstDifference' | 'termination'>,
  recorded?: TerminationReason,
): RunClass | undefined {
  if (report.identical) return undefined;
  const d = report.divergence;
  if (d?.unreplayable === true) return UNREPLAYABLE;
  // A record that does not read: what the run did after it is not to be judged by it.
  if (d?.kind === 'unreadable_record' || d?.kind === 'no_end_record') return 'history';
  if (d?.kind === 'request_changed') return 'prompt';
  if (d?.kind === 'arguments_changed' || d?.kind === 'call_not_recorded') return 'tool_arguments';
  const ended = recorded !== undefined && report.termination !== undefined && JSON.stringify(recorded) !== JSON.stringify(report.termination);
  // A stop condition that fires on one side only (another max_rounds, budget or timeout) is the
  // change: the calls it leaves undone and the draws it skips follow from it.
  if (ended && (recorded.type === 'stopped' || report.termination?.type === 'stopped')) return 'termination';
  const f = report.firstDifference;
  const type = f === undefined ? undefined : (eventTypeOf(f.expected) ?? eventTypeOf(f.actual));
  // An event that says something else than recorded, beyond the ids drawn for it, is what changed.
  if (type !== undefined && f !== undefined && !idsOnly(f.diff)) return classOfEvent(type);
  if (ended) return 'termination';
  // The record itself went elsewhere: a draw, a decision or a cancel that is not the recorded one.
  if (d !== undefined && (d.port === 'env' || d.port === 'decision' || d.port === 'cancel' || d.port === 'transcript')) return 'history';
  if (type !== undefined) return idsOnly(f?.diff ?? []) ? 'history' : classOfEvent(type);
  if (d?.port === 'end') return d.kind === 'result_changed' && d.fields?.includes('termination') === true ? 'termination' : 'events';
  return 'history';
}

/** Whether an event's diff (`- path: value` lines) changes ids alone: what other draws give, not what the run says. */
function idsOnly(diff: readonly string[]): boolean {
  const paths = diff.map((line) => /^[-+|<>] ([^:]+):/.exec(line)?.[1]);
  return paths.length > 0 && paths.every((path) => path !== undefined && /(?:^|[._])id$/.test(path));
}

/** How the recorded run ended, as its `end` record says (undefined when it has none that reads). */
export function recordedTermination(text: string): TerminationReason | undefined {
  const from = text.lastIndexOf('\n{"type":"end"');
  if (from < 0) return undefined;
  const to = text.indexOf('\n', from + 1);
  try {
    const end = JSON.parse(text.slice(from + 1, to < 0 ? undefined : to)) as { result?: { termination?: TerminationReason } };
    return end.result?.termination;
  } catch {
    return undefined;
  }
}

/** A manifest of expected divergences (YAML or JSON; `schemas/replay-expectations.schema.json`). */
export const ReplayExpectationsSchema = z
  .strictObject(
    {
      $schema: z.string().optional().describe('The JSON Schema of this file, for an editor'),
      expected: z
        .array(
          z.strictObject(
            {
              runs: z
                .union([z.literal('*'), z.array(z.string().min(1, 'a run names a file')).min(1, "a list of at least one run, or '*'")], {
                  error: "a list of runs or '*'",
                })
                .describe("The runs this applies to, each a path relative to the folder replayed, or '*' for every run"),
              class: z.enum(DIVERGENCE_CLASSES).describe('The class of divergence the change makes in them'),
              why: z.string().min(1, 'say why').describe('Why it is expected: the change that makes it'),
            },
            { error: 'an expectation is { runs, class, why }' },
          ),
          { error: 'a list of expectations, each { runs, class, why }' },
        )
        .describe('Each divergence a change was meant to make'),
    },
    { error: 'a manifest is a map with `expected`: a list of { runs, class, why }' },
  )
  .describe('Divergences an `awaken replay DIR --baseline` accepts');
export type ReplayExpectations = z.infer<typeof ReplayExpectationsSchema>;

/** A manifest that cannot be used: the field, and what is wrong with it. */
export class ExpectationsError extends Error {
  readonly field: string;
  readonly problem: string;
  constructor(field: string, problem: string) {
    super(field === '' ? problem : `${field}: ${problem}`);
    this.name = 'ExpectationsError';
    this.field = field;
    this.problem = problem;
  }
}

/**
 * Reads a manifest (YAML, of which JSON is a part) and checks it against the runs replayed: a run
 * it names that is not among them is refused, like any field that is wrong.
 */
export function readExpectations(text: string, runs: readonly string[]): ReplayExpectations {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (e) {
    const first = (e instanceof Error ? e.message : String(e)).split('\n')[0]?.replace(/:$/, '') ?? '';
    // A bare `*` is a YAML alias: the likeliest slip in a manifest.
    throw new ExpectationsError('', `not YAML or JSON: ${first}${/alias/i.test(first) ? " (write '*' in quotes: a bare * is a YAML alias)" : ''}`);
  }
  // A list of runs is checked entry by entry, so that a wrong one is named (zod names only the list).
  const entries = typeof raw === 'object' && raw !== null ? (raw as { expected?: unknown }).expected : undefined;
  if (Array.isArray(entries))
    entries.forEach((e: unknown, i) => {
      const runs = typeof e === 'object' && e !== null ? (e as { runs?: unknown }).runs : undefined;
      if (!Array.isArray(runs)) return;
      runs.forEach((run: unknown, j) => {
        if (typeof run !== 'string' || run === '') throw new ExpectationsError(`expected[${i}].runs[${j}]`, 'must be a path in the folder (a string)');
        const first = runs.indexOf(run);
        if (first !== j) throw new ExpectationsError(`expected[${i}].runs[${j}]`, `'${run}' is named already (runs[${first}])`);
      });
    });
  const parsed = ReplayExpectationsSchema.safeParse(raw);
  if (!parsed.success) {
    // A field the manifest does not know explains what is missing beside it (`klass` for `class`).
    const issues = fieldIssues(parsed.error);
    const issue = issues.find((i) => i.unknown === true) ?? issues[0];
    const field = issue === undefined ? '' : bracketPath(issue.path);
    const value = issue === undefined ? undefined : pathValue(raw, issue.path);
    const problem =
      issue?.unknown === true
        ? 'unknown field'
        : value === undefined && issue !== undefined && issue.path.length > 0
          ? 'missing'
          : issue?.path.at(-1) === 'class'
            ? `one of ${DIVERGENCE_CLASSES.join(', ')}, not ${JSON.stringify(value)}`
            : (wrongType(issue?.message) ?? issue?.message ?? 'not a manifest');
    throw new ExpectationsError(field, problem);
  }
  const known = new Set(runs);
  parsed.data.expected.forEach((e, i) => {
    if (e.runs === '*') return;
    e.runs.forEach((run, j) => {
      if (!known.has(run)) throw new ExpectationsError(`expected[${i}].runs[${j}]`, `'${run}' is not a run in the folder replayed`);
    });
  });
  return parsed.data;
}

/** zod's "Invalid input: expected string, received null" as this project words it: `must be a string, not null`. */
function wrongType(message: string | undefined): string | undefined {
  const m = /^Invalid input: expected (\w+), received (\w+)$/.exec(message ?? '');
  return m === null ? undefined : `must be ${/^[aeiou]/.test(m[1] as string) ? 'an' : 'a'} ${m[1]}, not ${m[2]}`;
}

const pathValue = (value: unknown, path: readonly PropertyKey[]): unknown =>
  path.reduce<unknown>((v, k) => (typeof v === 'object' && v !== null ? (v as Record<PropertyKey, unknown>)[k] : undefined), value);

/** A recorded run: its name (a path relative to the folder) and its transcript. */
export interface BaselineRun {
  readonly name: string;
  readonly text: string;
}

/** What the gate says of one run. */
export interface GateRun {
  readonly run: string;
  readonly identical: boolean;
  readonly expectedEvents: number;
  readonly actualEvents: number;
  readonly class?: RunClass;
  /** The expectation that accepted its divergence: its index in the manifest, and why. */
  readonly accepted?: { readonly expectation: number; readonly why: string };
  readonly at?: TranscriptPlace;
  readonly divergence?: PortDivergence;
  readonly firstDifference?: ReplayReport['firstDifference'];
}

/** A class of divergence: how many runs, how many of them accepted, and the first of them. */
export interface GateClass {
  readonly class: RunClass;
  readonly runs: number;
  readonly accepted: number;
  readonly first: string;
}

/** An expectation a run did not meet: it replayed identical, diverged in another class or could not be replayed; for `'*'` (`run: '*'`), no run diverged in its class (`got: 'none'`). */
export interface UnmetExpectation {
  readonly expectation: number;
  readonly run: string;
  readonly class: DivergenceClass;
  readonly got: RunClass | 'identical' | 'none';
}

export interface GateReport {
  /** Every run identical, or its divergence accepted. */
  readonly passed: boolean;
  readonly runs: readonly GateRun[];
  readonly classes: readonly GateClass[];
  readonly unmet: readonly UnmetExpectation[];
}

export interface BaselineOptions {
  /** The app the runs came from, at the version to check (`ReplayOptions.app`). */
  readonly app?: AppCode;
  /**
   * The agents as they are now (an app's): a run whose agent is among them (by id) replays with it
   * in place of the one its header recorded, so a changed prompt or config shows; the others with
   * their recorded one.
   */
  readonly agents?: readonly AgentSpec[];
  readonly expectations?: ReplayExpectations;
  /** Told after each run. */
  readonly onRun?: (run: GateRun, index: number, of: number) => void;
}

/** The id of the agent a transcript's header names, if its first line says. */
function headerAgentId(text: string): string | undefined {
  try {
    const end = text.indexOf('\n');
    const id = (JSON.parse(end < 0 ? text : text.slice(0, end)) as { agent?: { id?: unknown } }).agent?.id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

/** A file or folder under the folder replayed that cannot be read: its path, and why. */
export class FolderReadError extends Error {
  readonly path: string;
  constructor(path: string, e: unknown) {
    // The folder listed it: an entry that is not there is a link to nothing.
    const gone = typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'ENOENT';
    super(`cannot read ${path}: ${gone ? 'no such file (a broken link?)' : whyUnreadable(e)}`);
    this.name = 'FolderReadError';
    this.path = path;
  }
}

/**
 * The transcripts under `dir` (`*.jsonl` files, in sub-folders too), by their path relative to it,
 * in order. A link to a file counts as the file; a link to a folder is not followed (a link back up
 * would list the same runs again and again). What cannot be read is a `FolderReadError`.
 */
export function transcriptsUnder(dir: string): string[] {
  const found: string[] = [];
  const walk = (rel: string): void => {
    const here = rel === '' ? dir : join(dir, rel);
    let entries: Dirent[];
    try {
      entries = readdirSync(here, { withFileTypes: true });
    } catch (e) {
      throw new FolderReadError(here, e);
    }
    for (const entry of entries) {
      const name = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) walk(name);
      else if (entry.name.endsWith('.jsonl') && (entry.isFile() || (entry.isSymbolicLink() && linkedFile(join(dir, name))))) found.push(name);
    }
  };
  walk('');
  return found.sort();
}

/** Whether a link leads to a file (a broken one is a `FolderReadError`). */
function linkedFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch (e) {
    throw new FolderReadError(path, e);
  }
}

/** The transcripts under `dir` (`transcriptsUnder`), read. */
export function baselineRuns(dir: string): BaselineRun[] {
  return transcriptsUnder(dir).map((name) => {
    try {
      return { name, text: readFileSync(join(dir, name), 'utf8') };
    } catch (e) {
      throw new FolderReadError(join(dir, name), e);
    }
  });
}

/**
 * Replays each run (or every transcript under a folder) and sorts its divergence into a class; a
 * divergence an expectation names (its run and its class) is accepted. Passes when every run is
 * identical or accepted.
 */
export async function replayBaseline(source: string | readonly BaselineRun[], options: BaselineOptions = {}): Promise<GateReport> {
  const runs = typeof source === 'string' ? baselineRuns(source) : source;
  const expected = options.expectations?.expected ?? [];
  const gated: GateRun[] = [];
  for (const [i, { name, text }] of runs.entries()) {
    const agentId = headerAgentId(text);
    const agent = agentId === undefined ? undefined : options.agents?.find((a) => a.id === agentId);
    const { end: _end, ...report } = await replayTranscript(text, {
      ...(options.app !== undefined ? { app: options.app } : {}),
      ...(agent !== undefined ? { agent } : {}),
    });
    const cls = classifyDivergence(report, recordedTermination(text));
    const by = cls === undefined ? -1 : expected.findIndex((e) => e.class === cls && (e.runs === '*' || e.runs.includes(name)));
    const run: GateRun = {
      run: name,
      identical: report.identical,
      expectedEvents: report.expectedEvents,
      actualEvents: report.actualEvents,
      ...(cls !== undefined ? { class: cls } : {}),
      ...(by >= 0 ? { accepted: { expectation: by, why: (expected[by] as { why: string }).why } } : {}),
      ...(report.at !== undefined ? { at: report.at } : {}),
      ...(report.divergence !== undefined ? { divergence: report.divergence } : {}),
      ...(report.firstDifference !== undefined ? { firstDifference: report.firstDifference } : {}),
    };
    gated.push(run);
    options.onRun?.(run, i, runs.length);
  }
  const classes = ([...DIVERGENCE_CLASSES, UNREPLAYABLE] as const).flatMap((c): GateClass[] => {
    const of = gated.filter((r) => r.class === c);
    const first = of[0];
    return first === undefined ? [] : [{ class: c, runs: of.length, accepted: of.filter((r) => r.accepted !== undefined).length, first: first.run }];
  });
  const byName = new Map(gated.map((r) => [r.run, r] as const));
  const unmet = expected.flatMap((e, i): UnmetExpectation[] => {
    // Every run: met when one run diverged so.
    if (e.runs === '*') return gated.some((r) => r.class === e.class) ? [] : [{ expectation: i, run: '*', class: e.class, got: 'none' }];
    return e.runs.flatMap((name): UnmetExpectation[] => {
      const got = byName.get(name)?.class ?? 'identical';
      return got === e.class ? [] : [{ expectation: i, run: name, class: e.class, got }];
    });
  });
  return { passed: gated.every((r) => r.identical || r.accepted !== undefined), runs: gated, classes, unmet };
}

/** How many lines of an event's diff the table shows. */
const DIFF_LINES = 6;

/** The gate's report as a table: each run, then each class with its first divergence, then the expectations not met. */
export function renderGate(report: GateReport, shown: (run: string) => string = (r) => r): string {
  const rows = report.runs.map((r) => [
    r.identical ? 'identical' : 'DIFFERS',
    r.class ?? '-',
    r.identical ? '-' : r.accepted !== undefined ? 'yes' : 'no',
    shown(r.run),
  ]);
  let out = renderTable(['result', 'class', 'accepted', 'file'], rows);
  for (const c of report.classes) {
    const first = report.runs.find((r) => r.run === c.first) as GateRun;
    out += `\n${c.class}: ${c.runs} run${c.runs === 1 ? '' : 's'}, ${c.accepted} accepted; the first, ${placeIn(shown(first.run), first.at)}:\n`;
    if (first.divergence !== undefined) out += `  ${first.divergence.port} (${whereInEvents(first.divergence.atEvent)}): ${first.divergence.message}\n`;
    else if (first.firstDifference !== undefined) {
      out += `  first differing event: #${first.firstDifference.index}\n`;
      const diff = first.firstDifference.diff;
      for (const d of diff.slice(0, DIFF_LINES)) out += `    ${d}\n`;
      if (diff.length > DIFF_LINES) out += `    … ${diff.length - DIFF_LINES} more: awaken replay ${shown(first.run)}\n`;
    }
    if (first.accepted !== undefined) out += `  accepted: ${first.accepted.why}\n`;
  }
  for (const u of report.unmet)
    out +=
      u.run === '*'
        ? `\nexpected ${u.class} in any run (expected[${u.expectation}]), but no run diverged so\n`
        : `\nexpected ${u.class} in ${shown(u.run)} (expected[${u.expectation}]), but it ${u.got === 'identical' ? 'replayed identical' : u.got === UNREPLAYABLE ? 'could not be replayed' : `diverged in ${u.got}`}\n`;
  const identical = report.runs.filter((r) => r.identical).length;
  const accepted = report.runs.filter((r) => r.accepted !== undefined).length;
  const refused = report.runs.length - identical - accepted;
  out += `\n${report.runs.length} run${report.runs.length === 1 ? '' : 's'}: ${identical} identical, ${accepted} accepted, ${refused} not accepted — ${report.passed ? 'passed' : 'failed'}\n`;
  return out;
}

/**
 * The manifest's format as JSON Schema (2020-12): `schemas/replay-expectations.schema.json` in the
 * package is this, written out (an editor reads it through the manifest's `$schema`).
 */
export function expectationsJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(ReplayExpectationsSchema, { io: 'input' }) as Record<string, unknown>;
}
