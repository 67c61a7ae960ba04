import { existsSync, readFileSync } from 'node:fs';
import type { ServeProcess } from '../support/serve-process.ts';

// What the two crash-point tables share (crash-points.spec.ts, one instance restarted;
// cluster-crash-points.spec.ts, two instances on PostgreSQL): the points, what each must show, and
// how a kill is read.

/** Each durable point: the store's by AWAKEN_CRASH_AT, inside a tool and mid-inference by the fixture app. */
export const POINTS = [
  { name: 'before-batch', env: 'AWAKEN_CRASH_AT', value: 'before-batch:1' },
  { name: 'before-executing', env: 'AWAKEN_CRASH_AT', value: 'before-executing:1' },
  { name: 'before-dispatch', env: 'AWAKEN_CRASH_AT', value: 'before-dispatch:1' },
  { name: 'in-tool', env: 'AWAKEN_TEST_CRASH_IN', value: 'in-tool:1' },
  // Parallel calls only: `charge` settled and its outcome stored while `lookup` still runs.
  { name: 'after-outcome', env: 'AWAKEN_CRASH_AT', value: 'after-outcome:1', agent: 'parallel' },
  { name: 'before-finalise', env: 'AWAKEN_CRASH_AT', value: 'before-finalise:1' },
  { name: 'in-publication', env: 'AWAKEN_CRASH_AT', value: 'in-publication:1' },
  { name: 'in-inference (tool use)', env: 'AWAKEN_TEST_CRASH_IN', value: 'in-inference:1' },
  { name: 'in-inference (answer)', env: 'AWAKEN_TEST_CRASH_IN', value: 'in-inference:2' },
] as const;
/** Where `charge` is recorded Executing without its outcome stored when the process dies. */
export const EXECUTING_WITHOUT_OUTCOME = new Set<string>(['before-dispatch', 'in-tool']);
/** Where it had not run yet: reported unknown, it never runs. */
export const NEVER_RUN = new Set<string>(['before-dispatch']);

/** The agent a kill at `point` runs: the point's own, else sequential and parallel in turn. */
export const agentAt = (point: (typeof POINTS)[number], kill: number): string => ('agent' in point ? point.agent : kill % 2 === 0 ? 'sequential' : 'parallel');

export const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** How often `charge` and `lookup` ran on `thread`, as the fixture's tools counted them in `file`. */
export const countsOf = (file: string, thread: string): { charge: number; lookup: number } => {
  const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n') : [];
  return { charge: lines.filter((l) => l === `${thread} charge`).length, lookup: lines.filter((l) => l === `${thread} lookup`).length };
};

/** Whether the server process has ended, or ends within `ms`. */
export const exited = (s: ServeProcess, ms: number): Promise<boolean> =>
  s.child.exitCode !== null || s.child.signalCode !== null
    ? Promise.resolve(true)
    : new Promise((r) => {
        const t = setTimeout(() => r(false), ms);
        s.child.once('exit', () => {
          clearTimeout(t);
          r(true);
        });
      });

/** A row of a table: what the kills at one point showed (each a count of kills; 1 per kill while judging one). */
export interface KillRow {
  kills: number;
  /** The server died by itself at the point (the hook fired). */
  crashed: number;
  stuck: number;
  chargedTwice: number;
  chargedNever: number;
  indeterminate: number;
  /** Indeterminate, but `charge` ran after the run was taken up: run once and still reported unknown. */
  indeterminateRunAfter: number;
  lookupOverRun: number;
  badHistory: number;
}

/** A row with nothing counted. */
export const EMPTY_ROW: KillRow = {
  kills: 0,
  crashed: 0,
  stuck: 0,
  chargedTwice: 0,
  chargedNever: 0,
  indeterminate: 0,
  indeterminateRunAfter: 0,
  lookupOverRun: 0,
  badHistory: 0,
};

/** What `kills` kills at `point` must show: each crashed; `charge` unknown where it was Executing, never run where it had not started. */
export const expectedRow = (point: (typeof POINTS)[number], kills: number): KillRow => ({
  ...EMPTY_ROW,
  kills,
  crashed: kills,
  indeterminate: EXECUTING_WITHOUT_OUTCOME.has(point.name) ? kills : 0,
  chargedNever: NEVER_RUN.has(point.name) ? kills : 0,
});

/** What a run that ended by itself is judged on. */
type EndedRow = Pick<KillRow, 'chargedTwice' | 'chargedNever' | 'lookupOverRun' | 'badHistory' | 'indeterminate' | 'indeterminateRunAfter'>;

/**
 * Judges a run on `thread` that ended naturally on the server at `url`: how often its tools ran
 * (`counts`, against `before` the kill), the thread's history, and whether `charge` ended unknown.
 */
export async function judgeEnded(url: string, thread: string, counts: string, before: { readonly charge: number }, row: EndedRow): Promise<void> {
  const after = countsOf(counts, thread);
  if (after.charge > 1) row.chargedTwice = 1;
  if (after.charge < 1) row.chargedNever = 1;
  if (after.lookup > 2 || after.lookup < 1) row.lookupOverRun = 1;
  const page = (await (await fetch(`${url}/v1/threads/${thread}/messages?limit=50`)).json()) as {
    messages: { role: string; tool_call_id?: string; content: { text?: string }[] }[];
  };
  const shape = page.messages.map((m) => (m.role === 'tool' ? `tool:${m.tool_call_id}` : m.role));
  if (JSON.stringify(shape) !== JSON.stringify(['user', 'assistant', 'tool:c1', 'tool:c2', 'assistant'])) row.badHistory = 1;
  const chargeText =
    page.messages
      .find((m) => m.tool_call_id === 'c1')
      ?.content.map((c) => c.text ?? '')
      .join('') ?? '';
  if (chargeText.startsWith('The outcome of tool call c1 (charge) is unknown')) {
    row.indeterminate = 1;
    if (after.charge > before.charge) row.indeterminateRunAfter = 1;
  }
}
