/**
 * Two texts line by line, side by side (`awaken replay --format pretty`, the inspector's replay
 * view): the longest common subsequence of their lines kept, each other line paired with its
 * counterpart where both sides changed.
 */
export type Row =
  | { readonly op: 'same'; readonly left: string; readonly right: string }
  | { readonly op: 'changed'; readonly left: string; readonly right: string }
  | { readonly op: 'left'; readonly left: string }
  | { readonly op: 'right'; readonly right: string };

/** The rows of `left` against `right` (at most 2,000 lines a side: beyond, the rest is compared as changed). */
export function lineRows(left: readonly string[], right: readonly string[]): Row[] {
  const a = left.slice(0, 2000);
  const b = right.slice(0, 2000);
  // lcs[i][j]: the common subsequence length of a[i..] and b[j..].
  const lcs: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    const row = lcs[i] as number[];
    const below = lcs[i + 1] as number[];
    for (let j = b.length - 1; j >= 0; j--) row[j] = a[i] === b[j] ? (below[j + 1] as number) + 1 : Math.max(below[j] as number, row[j + 1] as number);
  }
  const rows: Row[] = [];
  const lefts: string[] = [];
  const rights: string[] = [];
  const flush = (): void => {
    const n = Math.max(lefts.length, rights.length);
    for (let k = 0; k < n; k++) {
      const l = lefts[k];
      const r = rights[k];
      rows.push(
        l !== undefined && r !== undefined
          ? { op: 'changed', left: l, right: r }
          : l !== undefined
            ? { op: 'left', left: l }
            : { op: 'right', right: r as string },
      );
    }
    lefts.length = 0;
    rights.length = 0;
  };
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      flush();
      rows.push({ op: 'same', left: a[i] as string, right: b[j] as string });
      i++;
      j++;
    } else if (j >= b.length || (i < a.length && ((lcs[i + 1] as number[])[j] as number) >= ((lcs[i] as number[])[j + 1] as number)))
      lefts.push(a[i++] as string);
    else rights.push(b[j++] as string);
  }
  flush();
  for (const l of left.slice(2000)) rows.push({ op: 'left', left: l });
  for (const r of right.slice(2000)) rows.push({ op: 'right', right: r });
  return rows;
}

/** A JSON text pretty-printed (two spaces), or the text itself when it is not JSON. */
export function prettyJson(text: string | undefined): string[] {
  if (text === undefined) return ['(none)'];
  try {
    return JSON.stringify(JSON.parse(text), null, 2).split('\n');
  } catch {
    return [text];
  }
}

/** The path-level diff lines of a report (`- path: old`, `+ path: new`) as rows: the old and the new value of each path side by side. */
export function changeRows(diff: readonly string[]): Row[] {
  const rows: Row[] = [];
  const pending = new Map<string, number>();
  for (const line of diff) {
    const m = /^([-+]) ([^:]+): (.*)$/.exec(line);
    if (m === null) {
      rows.push({ op: 'same', left: line, right: line });
      continue;
    }
    const [, sign, path, value] = m as unknown as [string, string, string, string];
    const text = `${path}: ${value}`;
    if (sign === '-') {
      pending.set(path, rows.length);
      rows.push({ op: 'left', left: text });
      continue;
    }
    const at = pending.get(path);
    if (at !== undefined) {
      rows[at] = { op: 'changed', left: (rows[at] as { left: string }).left, right: text };
      pending.delete(path);
    } else rows.push({ op: 'right', right: text });
  }
  return rows;
}

/** Rows as two columns of `width` characters: ` ` same, `|` changed, `<` left only, `>` right only. */
export function renderRows(rows: readonly Row[], width: number, titles: readonly [string, string] = ['recorded', 'now']): string[] {
  const cell = (s: string, other?: string): string => {
    if (s.length <= width) return s.padEnd(width);
    // A changed line too long for its column is shown from a little before where it differs from
    // its counterpart, so the change is in view.
    let at = 0;
    if (other !== undefined) while (at < s.length && s[at] === other[at]) at++;
    if (at < width - 1) return `${s.slice(0, width - 1)}…`;
    const start = Math.max(1, Math.min(at - Math.floor(width / 3), s.length - (width - 1)));
    return start + width - 1 >= s.length ? `…${s.slice(start)}`.padEnd(width) : `…${s.slice(start, start + width - 2)}…`;
  };
  const out = [`${cell(titles[0])}   ${titles[1]}`, `${'─'.repeat(width)}   ${'─'.repeat(Math.min(width, 40))}`];
  for (const r of rows) {
    if (r.op === 'same') out.push(`${cell(r.left)}   ${r.right}`);
    else if (r.op === 'changed') out.push(`${cell(r.left, r.right)} | ${r.right}`);
    else if (r.op === 'left') out.push(`${cell(r.left)} <`);
    else out.push(`${cell('')} > ${r.right}`);
  }
  return out.map((l) => l.trimEnd());
}

/** How many lines of a recorded record a divergence without a path diff shows. */
const RECORD_LINES = 40;

/**
 * The rows of where a replay left the recording (`awaken replay --format pretty`, the inspector): a
 * port's path-level diff path by path; without one, the recorded record (at most 40 lines of it)
 * beside the line the replay has there (a history that differs) or else the reason; and for the
 * first differing event, the recorded and the replayed one line by line.
 */
export function divergenceRows(
  divergence: { readonly message: string; readonly diff?: readonly string[]; readonly replayed?: string },
  recordedLine: string | undefined,
): Row[] {
  if (divergence.diff !== undefined && divergence.diff.length > 0) return changeRows(divergence.diff);
  const clip = (shown: readonly string[]): string[] =>
    shown.length > RECORD_LINES ? [...shown.slice(0, RECORD_LINES), `… ${shown.length - RECORD_LINES} more lines`] : [...shown];
  return lineRows(clip(prettyJson(recordedLine)), divergence.replayed !== undefined ? clip(prettyJson(divergence.replayed)) : [divergence.message]);
}

/** The first differing event, recorded and replayed, line by line. */
export const eventRows = (difference: { readonly expected?: string; readonly actual?: string }): Row[] =>
  lineRows(prettyJson(difference.expected), prettyJson(difference.actual));

/** Where something happened, as a reader counts the events out by then: after event #n (from 0), or before any. */
export function whereInEvents(events: number): string {
  return events === 0 ? 'before any event' : `after event #${events - 1}`;
}
