/**
 * The server's log: one line per record, with a level, a message and fields; `json` (one object per
 * line, for collectors) or `pretty` (for a terminal). Secrets never reach a line: fields named like a
 * credential are replaced, and every string is scrubbed of the secret values the logger was given,
 * of bearer tokens and of passwords in URLs.
 */

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export interface LoggerOptions {
  readonly level?: LogLevel;
  readonly format?: LogFormat;
  /** Where each line goes (a trailing newline included). */
  readonly write: (line: string) => void;
  /** The time of a record, ms since the epoch (the runtime's `Env` clock). */
  readonly now: () => number;
  /**
   * Values that must never appear in a line (API keys, tokens); short ones (< 6 characters) are
   * ignored. A `SecretValues` may be given more while the server runs (a token a config write names).
   */
  readonly secrets?: readonly string[] | SecretValues;
}

/** A growing set of values no log line may show, longest first (so a longer secret is replaced whole). */
export class SecretValues {
  readonly #values = new Set<string>();
  #sorted: readonly string[] = [];

  constructor(values: Iterable<string> = []) {
    this.add(...values);
  }

  add(...values: string[]): void {
    let changed = false;
    for (const v of values) {
      if (v.length < 6 || this.#values.has(v)) continue;
      this.#values.add(v);
      changed = true;
    }
    if (changed) this.#sorted = [...this.#values].sort((a, b) => b.length - a.length);
  }

  get values(): readonly string[] {
    return this.#sorted;
  }
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };
/** What stands in for a credential. */
export const REDACTED = '[redacted]';
/** Field names whose values are credentials. */
const SECRET_KEY = /^(authorization|cookie|.*api[-_]?key|.*token|.*secret|.*password)$/i;

/** Whether a field of that name holds a credential (`authorization`, `cookie`, `*api_key`, `*token`, `*secret`, `*password`). */
export const credentialKey = (name: string): boolean => SECRET_KEY.test(name);

/**
 * Characters a terminal acts on (C0 and C1 controls, DEL: `ESC [31m` colours, `CSI 2J` clears the
 * screen), line and paragraph separators, and bidirectional overrides that reorder what a reader
 * sees. A path, a thread id or an error message may carry them, decoded from a request.
 */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const CONTROLS = new RegExp(CONTROL.source, 'g');
const ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** A text with every control character written as an escape (`\n`, `\u001b`), as JSON writes them. */
export const escapeControls = (text: string): string => text.replace(CONTROLS, (ch) => ESCAPES[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** A text with the password of every URL in it (`scheme://user:password@host`) replaced. */
export const hideUrlPasswords = (text: string): string => text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^:/@\s]+:)[^@\s/]+@/gi, `$1${REDACTED}@`);

/** A text with URL passwords and the values of credential-named query parameters (`?api_key=…`, `&token=…`) replaced. */
export const hideUrlCredentials = (text: string): string =>
  hideUrlPasswords(text).replace(/([?&])([A-Za-z0-9_.-]*(?:key|token|secret|password|signature|sig))=[^&#\s"']*/gi, `$1$2=${REDACTED}`);

/** A logger that writes nothing. */
export const silentLogger: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/** The secret values of an environment: variables named like a key, a token, a secret or a password. */
export function secretsOf(env: NodeJS.ProcessEnv): string[] {
  return Object.entries(env).flatMap(([name, value]) => (/(KEY|TOKEN|SECRET|PASSWORD)/i.test(name) && value !== undefined && value.length >= 6 ? [value] : []));
}

/** What a log line says about an error: its message, its code, and the causes under it. */
export function errorFields(e: unknown): Record<string, unknown> {
  if (!(e instanceof Error)) return { error: String(e) };
  const causes: string[] = [];
  let cause: unknown = e.cause;
  for (let i = 0; i < 5 && cause !== undefined; i++) {
    causes.push(cause instanceof Error ? `${cause.message}${codeOf(cause) !== undefined ? ` (${codeOf(cause)})` : ''}` : String(cause));
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  const code = codeOf(e);
  return { error: e.message, ...(code !== undefined ? { code } : {}), ...(causes.length > 0 ? { cause: causes.join(' ← ') } : {}) };
}

function codeOf(e: Error): string | undefined {
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

export function createLogger(options: LoggerOptions): Logger {
  const threshold = RANK[options.level ?? 'info'];
  const format = options.format ?? 'pretty';
  const secrets = options.secrets instanceof SecretValues ? options.secrets : new SecretValues(options.secrets ?? []);
  const scrub = (text: string): string => {
    let out = text;
    for (const s of secrets.values) out = out.split(s).join(REDACTED);
    return hideUrlCredentials(out.replace(/\b(bearer)\s+[^\s"',]+/gi, `$1 ${REDACTED}`));
  };
  const clean = (key: string, value: unknown, depth: number): unknown => {
    if (SECRET_KEY.test(key) && value !== undefined && value !== null && value !== '') return REDACTED;
    if (typeof value === 'string') return scrub(value);
    if (typeof value !== 'object' || value === null) return value;
    if (depth > 4) return '[…]';
    if (Array.isArray(value)) return value.map((v) => clean('', v, depth + 1));
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, clean(k, v, depth + 1)]));
  };
  const emit = (level: Exclude<LogLevel, 'silent'>, message: string, fields: LogFields = {}): void => {
    if (RANK[level] < threshold) return;
    const time = new Date(options.now()).toISOString();
    const entries = Object.entries(fields).flatMap(([k, v]) => (v === undefined ? [] : [[k, clean(k, v, 0)] as const]));
    // Every line is one line of text a terminal only prints: JSON escapes C0 controls, the rest
    // (DEL, C1, separators, bidi overrides) are escaped here, in both formats.
    if (format === 'json') {
      options.write(`${escapeControls(JSON.stringify({ time, level, msg: scrub(message), ...Object.fromEntries(entries) }))}\n`);
      return;
    }
    const rest = entries
      .map(([k, v]) => `${k}=${typeof v === 'string' && !/[\s"=]/.test(v) && !CONTROL.test(v) && v !== '' ? v : escapeControls(JSON.stringify(v))}`)
      .join(' ');
    options.write(`${time.slice(11, 23)} ${level.toUpperCase().padEnd(5)} ${escapeControls(scrub(message))}${rest !== '' ? ` ${rest}` : ''}\n`);
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  };
}
