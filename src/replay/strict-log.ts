import { envLineOf, TranscriptLog } from './recorder.ts';
import type { RequestChain } from './transcript.ts';
import type { AgentEvent } from '../contract/event.ts';
import { isJsonValue, type JsonValue } from '../contract/json.ts';

/**
 * Runs `f` once every promise job queued before it, and every job those queue, has run: a tick
 * queued from a promise job runs when the job queue is empty (one queued from a tick would run
 * before the jobs already waiting).
 */
const later = (f: () => void): void => queueMicrotask(() => process.nextTick(f));

/**
 * Whether every field of a JSON value's objects is one its JSON shows, and its JSON shows nothing
 * else: a field that is not enumerable is left out of the JSON, but a schema that names it reads it. `value` is JSON
 * (`isJsonValue`), so the walk ends.
 */
function allShown(value: JsonValue): boolean {
  if (typeof value !== 'object' || value === null) return true;
  // An array's JSON is what its `toJSON` says, if it has one (its own, or its prototype's), where a
  // schema reading the array reads its entries.
  if (Array.isArray(value)) return Object.getPrototypeOf(value) === Array.prototype && !Object.hasOwn(value, 'toJSON') && value.every(allShown);
  let shown = 0;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (!allShown(value[key] as JsonValue)) return false;
    shown++;
  }
  return Object.getOwnPropertyNames(value).length === shown;
}

/** The first line where what a replay re-records leaves the transcript it replays, with both sides. */
export interface Mismatch {
  /** 1-based; one past the transcript's last line when the replay wrote more than it holds. */
  readonly line: number;
  /** The transcript's line there; absent past its end. */
  readonly recorded?: string;
  /** What the replay wrote there; absent when it had ended before it. */
  readonly replayed?: string;
}

interface Waiter {
  /** The line the waiter's record is on (Infinity: it has none, and waits for the replay to stall). */
  readonly line: number;
  readonly resolve: () => void;
}

/**
 * The replay's own recording, line by line beside the transcript it replays: a faithful replay
 * writes the transcript again byte for byte, so the first line where the two differ is where the
 * history was changed — a record missing, one more, or two in another order, whichever port they
 * belong to. Records written by the recorder's own port wrappers, so what is compared is exactly
 * what recording the same run would write.
 *
 * It also orders what runs at once: a tool call of a parallel batch settles only when its record is
 * next (`turn`), so the readings taken as calls settle go to the calls that drew them. A wait never
 * hangs a replay: when the run has done all it could and written nothing (a replay is in memory, so
 * nothing else can come), the earliest waiter goes on, out of order.
 */
export class StrictLog extends TranscriptLog {
  /** The transcript's non-blank lines, header first, and the line number of each. */
  readonly #input: readonly string[];
  readonly #numbers: readonly number[];
  /** Whether each input line was read as a valid record in canonical form. */
  readonly #canonical: readonly boolean[];
  readonly #byLine = new Map<number, string>();
  #mismatch: Mismatch | undefined;
  #onMismatch: ((m: Mismatch) => void) | undefined;
  readonly #same: (recorded: string, replayed: string) => boolean;
  readonly #waiters: Waiter[] = [];
  /** Recorded lines to write once the replay reaches them (`rawAt`). */
  readonly #pending = new Map<number, string>();
  #watching = false;
  /** A replay's tools answer from their records: no sub-run is made inside one, so no async context is needed to tell one apart. */
  override readonly toolsInContext = false;

  /**
   * `input`: the transcript's lines that are not blank, header first, each with its line number (a
   * blank line is no record: it is skipped, as reading skips it), and whether it was read as a valid
   * record in canonical form (`trusted`). The header is taken as it is: it is checked on its own.
   */
  constructor(
    input: readonly { readonly line: number; readonly text: string; readonly trusted?: boolean }[],
    onMismatch: (m: Mismatch) => void,
    /** Whether a line the replay wrote stands for the recorded one (byte equality, unless told otherwise). */
    same: (recorded: string, replayed: string) => boolean = (a, b) => a === b,
    /** The chain the replay's requests are recorded in (a new one unless given). */
    requests?: RequestChain,
  ) {
    super(requests);
    this.#same = same;
    this.#input = input.map((l) => l.text);
    this.#numbers = input.map((l) => l.line);
    this.#canonical = input.map((l) => l.trusted === true);
    for (const l of input) this.#byLine.set(l.line, l.text);
    this.#onMismatch = onMismatch;
    this.lines.push(this.#input[0] ?? '');
  }

  /** The transcript line number of the `j`-th record (0-based; past the last, the lines after it). */
  #lineOf(j: number): number {
    return this.#numbers[j] ?? (this.#numbers.at(-1) ?? 0) + 1 + j - this.#numbers.length;
  }

  /** The transcript line the next record written goes on. */
  get position(): number {
    return this.#lineOf(this.lines.length);
  }

  /** The transcript's text on line `line`. */
  textAt(line: number): string | undefined {
    return this.#byLine.get(line);
  }

  /** What the replay wrote on transcript line `line`, if it got that far. */
  writtenAt(line: number): string | undefined {
    let j = this.#numbers.indexOf(line);
    if (j < 0 && line > (this.#numbers.at(-1) ?? 0)) j = this.#numbers.length + line - (this.#numbers.at(-1) ?? 0) - 1;
    return j >= 0 ? this.lines[j] : undefined;
  }

  /**
   * The lines of the last `count` records before line `line` that `match` takes, in order; undefined
   * when there are fewer.
   */
  before(line: number, count: number, match: (text: string) => boolean): number[] | undefined {
    const found: number[] = [];
    if (count === 0) return found;
    for (let j = this.#numbers.indexOf(line) - 1; j > 0 && found.length < count; j--)
      if (match(this.#input[j] as string)) found.unshift(this.#numbers[j] as number);
    return found.length === count ? found : undefined;
  }

  /**
   * Writes a recorded line on its own line: now when the replay is there, or later when only
   * `between` lines come first (they are written as they come, and it after them); else now, out of
   * place, to be reported there.
   */
  rawAt(line: number | undefined, text: string, between: (text: string) => boolean): void {
    let later = line !== undefined && line > this.position && this.#mismatch === undefined;
    for (const ahead of later ? this.ahead() : []) {
      if (ahead.line === line) break;
      if (!between(ahead.text)) later = false;
      if (!later) break;
    }
    if (later && line !== undefined) this.#pending.set(line, text);
    else this.raw(text);
  }

  /** The transcript's records from the next one to be written on, each with its line. */
  *ahead(): Generator<{ readonly line: number; readonly text: string }> {
    for (let j = this.lines.length; j < this.#input.length; j++) yield { line: this.#lineOf(j), text: this.#input[j] as string };
  }

  get mismatch(): Mismatch | undefined {
    return this.#mismatch;
  }

  /**
   * A record that writes, as plain JSON, exactly the canonical line it replays is that line: the
   * schema's output depends on the JSON alone, and that line's is itself. Anything else is written
   * through the schema, as recording writes it.
   */
  protected override lineOf(record: object): string {
    // An env draw's line is written for less than the check below costs, and is the schema's line.
    const env = envLineOf(record);
    if (env !== undefined) return env;
    const j = this.lines.length;
    const recorded = this.#input[j];
    if (recorded !== undefined && this.#canonical[j] === true && isJsonValue(record) && allShown(record) && JSON.stringify(record) === recorded)
      return recorded;
    return super.lineOf(record);
  }

  /**
   * An event's line, when it is the transcript's next line, is kept as the transcript's own string:
   * the replay's lines then hold no second copy of a faithfully replayed event (most of a transcript).
   */
  protected override eventLine(seq: number, payload: string): string {
    const line = super.eventLine(seq, payload);
    const recorded = this.#input[this.lines.length];
    return recorded === line ? recorded : line;
  }

  override push(record: object): void {
    super.push(record);
    this.#written();
  }

  override event(e: AgentEvent, payload?: string): void {
    super.event(e, payload);
    this.#written();
  }

  /** A record written as the transcript has it (a decision or cancel the replay delivered). */
  raw(line: string): void {
    this.lines.push(line);
    this.#written();
  }

  /** The first transcript line the replay never reached, once it has ended. */
  finish(): void {
    for (const [, text] of [...this.#pending].sort(([a], [b]) => a - b)) this.raw(text);
    this.#pending.clear();
    if (this.#mismatch === undefined && this.lines.length < this.#input.length) {
      this.#found({ line: this.position, recorded: this.#input[this.lines.length] as string });
    }
  }

  /**
   * Undefined when the record on `line` is next (or the replay is already past it: it is written out
   * of order, and compared where it lands); else a promise that resolves when it is next, or when the
   * replay stalls with it the earliest waiting.
   */
  turn(line: number): Promise<void> | undefined {
    if (line <= this.position) return undefined;
    return this.#wait(line);
  }

  /** Resolves once the replay stalls with nothing else waiting before it (a call with no record). */
  stalled(): Promise<void> {
    return this.#wait(Number.POSITIVE_INFINITY);
  }

  #wait(line: number): Promise<void> {
    return new Promise<void>((resolve) => {
      let at = this.#waiters.findIndex((w) => w.line > line);
      if (at < 0) at = this.#waiters.length;
      this.#waiters.splice(at, 0, { line, resolve });
      this.#watch();
    });
  }

  #written(): void {
    const j = this.lines.length - 1;
    const recorded = this.#input[j];
    if (this.#mismatch === undefined && (recorded === undefined || !this.#same(recorded, this.lines[j] as string))) {
      this.#found({ line: this.#lineOf(j), ...(recorded !== undefined ? { recorded } : {}), replayed: this.lines[j] as string });
    }
    while (this.#waiters[0] !== undefined && this.#waiters[0].line <= this.position) this.#waiters.shift()?.resolve();
    const due = this.#pending.get(this.position);
    if (due !== undefined) {
      this.#pending.delete(this.position);
      this.raw(due);
    }
  }

  #found(m: Mismatch): void {
    this.#mismatch = m;
    const tell = this.#onMismatch;
    this.#onMismatch = undefined;
    tell?.(m);
  }

  /**
   * While calls wait, looks again each time the run has done all it can for now (a tick runs once
   * the promise jobs queued before it have, and a replay is promises all through): when nothing was
   * written since the last look, nothing will be, and the earliest waiter goes on.
   */
  #watch(): void {
    if (this.#watching) return;
    this.#watching = true;
    let seen = this.lines.length;
    const check = (): void => {
      if (this.#waiters.length === 0) {
        this.#watching = false;
        return;
      }
      if (this.lines.length === seen) this.#waiters.shift()?.resolve();
      seen = this.lines.length;
      later(check);
    };
    later(check);
  }
}
