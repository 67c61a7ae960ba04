import { closeSync, openSync, readSync } from 'node:fs';

/** A JSON object, as a line of a transcript holds one. */
export type JsonObject = Record<string, unknown>;

/** A line's JSON when it is an object; undefined when it is not JSON, or not an object. */
export function jsonObjectOf(line: string): JsonObject | undefined {
  try {
    const v: unknown = JSON.parse(line);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as JsonObject) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A file's lines, read a chunk at a time for as long as the caller takes them: a transcript's first
 * lines without the rest (a header can be long: it holds the thread's history).
 */
export function* fileLines(path: string): Generator<string> {
  const fd = openSync(path, 'r');
  try {
    const chunk = Buffer.alloc(64 * 1024);
    let pending: Buffer[] = [];
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      let from = 0;
      for (let nl = chunk.indexOf(10, from); nl >= 0 && nl < n; nl = chunk.indexOf(10, from)) {
        pending.push(Buffer.from(chunk.subarray(from, nl)));
        yield Buffer.concat(pending).toString('utf8');
        pending = [];
        from = nl + 1;
      }
      pending.push(Buffer.from(chunk.subarray(from, n)));
    }
    if (pending.length > 0) yield Buffer.concat(pending).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
