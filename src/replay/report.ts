import { readFileSync } from 'node:fs';
import type { AppCode } from './plugins.ts';
import { whyUnreadable } from '../contract/unreadable.ts';
import { replayTranscript, whereInEvents, type ReplayReport, type TranscriptPlace } from './replayer.ts';
import { divergenceRows, eventRows, renderRows } from './side-by-side.ts';
import { TRANSCRIPT_FORMAT } from './transcript.ts';

/** How reports are printed: a table with the divergences, JSON, or each divergence side by side. */
export type ReportFormat = 'table' | 'json' | 'pretty';

/** Where reports go: a line sink for results and one for progress. */
export interface ReportIo {
  out(text: string): void;
  err(text: string): void;
  /** A terminal's status line; without one, each file's result is a plain line on `err`. */
  readonly progress?: (line: string) => void;
}

export interface FileReport extends Omit<ReplayReport, 'end'> {
  readonly file: string;
}

/**
 * Replays files, with a progress line per file on stderr; exit 0 iff all are identical. `app`: the
 * app the runs came from, whose plugins and stop policies the replays run (`ReplayOptions.app`).
 */
export async function replayFiles(
  files: readonly string[],
  io: ReportIo,
  format: ReportFormat,
  options: { readonly width?: number; readonly app?: AppCode } = {},
): Promise<number> {
  const reports: FileReport[] = [];
  const texts = new Map<string, string>();
  for (let i = 0; i < files.length; i++) {
    const file = files[i] as string;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      reports.push({
        file,
        identical: false,
        expectedEvents: 0,
        actualEvents: 0,
        divergence: { port: 'transcript', message: `cannot read ${file}: ${whyUnreadable(e)}`, atEvent: 0, unreplayable: true },
      });
      continue;
    }
    texts.set(file, text);
    const { end: _end, ...report } = await replayTranscript(text, options.app !== undefined ? { app: options.app } : {});
    reports.push({ file, ...report });
    const line = `[${i + 1}/${files.length}] ${report.identical ? 'identical' : 'DIFFERS  '} ${file}`;
    if (io.progress !== undefined) io.progress(line);
    else if (files.length > 1) io.err(`${line}\n`);
  }
  io.progress?.('');
  if (format === 'json') io.out(`${JSON.stringify(reports, null, 2)}\n`);
  else if (format === 'pretty') io.out(renderPretty(reports, texts, options.width ?? 60));
  else io.out(renderReports(reports));
  return reports.every((r) => r.identical) ? 0 : 1;
}

/** Rows under a header, each column as wide as its widest cell (the last one left as it is), one line each. */
export function renderTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] as number))).join('  ');
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}

/** A line per file written in an older format: what was replayed is its migration, not its bytes. */
function migratedNotes(reports: readonly FileReport[]): string {
  return reports
    .filter((r) => r.migratedFrom !== undefined)
    .map((r) => `${r.file}: written as ${r.migratedFrom}, replayed as migrated to ${TRANSCRIPT_FORMAT}\n`)
    .join('');
}

/** Where in a transcript a replay left it: `FILE:LINE (a header record)`, or the file alone. */
export function placeIn(file: string, at: TranscriptPlace | undefined): string {
  return at === undefined ? file : `${file}:${at.line} (${/^[aeiou]/.test(at.record) ? 'an' : 'a'} ${at.record} record)`;
}

export function renderReports(reports: readonly FileReport[]): string {
  const rows = reports.map((r) => [
    r.identical ? 'identical' : 'DIFFERS',
    String(r.expectedEvents),
    String(r.actualEvents),
    r.termination?.type ?? '-',
    r.file,
  ]);
  let out = renderTable(['result', 'recorded', 'replayed', 'termination', 'file'], rows);
  const notes = migratedNotes(reports);
  if (notes !== '') out += `\n${notes}`;
  for (const r of reports.filter((x) => !x.identical)) {
    out += `\n${placeIn(r.file, r.at)}:\n`;
    if (r.divergence !== undefined) {
      out += `  ${r.divergence.port} (${whereInEvents(r.divergence.atEvent)}): ${r.divergence.message}\n`;
      for (const d of r.divergence.diff ?? []) out += `    ${d}\n`;
    }
    if (r.firstDifference !== undefined) {
      out += `  first differing event: #${r.firstDifference.index}\n`;
      out += `    recorded: ${r.firstDifference.expected ?? '(none)'}\n`;
      out += `    replayed: ${r.firstDifference.actual ?? '(none)'}\n`;
      for (const d of r.firstDifference.diff) out += `    ${d}\n`;
    }
  }
  const same = reports.filter((r) => r.identical).length;
  return `${out}\n${same} identical, ${reports.length - same} differ\n`;
}

/**
 * Each report, and for one that differs where it left the recording side by side: the recorded
 * record (or event) beside what the replay did now — an event's JSON line by line, a port's diff
 * path by path (`|` changed, `<` only recorded, `>` only now).
 */
export function renderPretty(reports: readonly FileReport[], texts: ReadonlyMap<string, string>, width: number): string {
  const notes = migratedNotes(reports);
  let out = notes === '' ? '' : `${notes}\n`;
  for (const r of reports) {
    if (r.identical) {
      out += `identical  ${r.file}  (${r.expectedEvents} events, ${r.termination?.type ?? '-'})\n`;
      continue;
    }
    out += `DIFFERS    ${r.file}${r.at !== undefined ? `:${r.at.line} (${r.at.record} record)` : ''}\n`;
    if (r.divergence !== undefined) {
      out += `\n  the ${r.divergence.port} port left the recording ${whereInEvents(r.divergence.atEvent)}: ${r.divergence.message}\n\n`;
      const recorded = r.divergence.line === undefined ? undefined : texts.get(r.file)?.split('\n')[r.divergence.line - 1];
      const rows = divergenceRows(r.divergence, recorded);
      out += `${renderRows(rows, width)
        .map((l) => `  ${l}`)
        .join('\n')}\n`;
    }
    if (r.firstDifference !== undefined) {
      out += `\n  first differing event: #${r.firstDifference.index}\n\n`;
      out += `${renderRows(eventRows(r.firstDifference), width)
        .map((l) => `  ${l}`)
        .join('\n')}\n`;
    }
    out += '\n';
  }
  const same = reports.filter((r) => r.identical).length;
  return `${out}${same} identical, ${reports.length - same} differ\n`;
}
