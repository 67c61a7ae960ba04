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
  /** Values that must never appear in a line (API keys, tokens); short ones (< 6 characters) are ignored. */
  readonly secrets?: readonly string[];
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };
const REDACTED = '[redacted]';
/** Field names whose values are credentials. */
const SECRET_KEY = /^(authorization|cookie|.*api[-_]?key|.*token|.*secret|.*password)$/i;

/** A text with the password of every URL in it (`scheme://user:password@host`) replaced. */
export const hideUrlPasswords = (text: string): string => text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^:/@\s]+:)[^@\s/]+@/gi, `$1${REDACTED}@`);

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
  const secrets = [...new Set(options.secrets ?? [])].filter((s) => s.length >= 6).sort((a, b) => b.length - a.length);
  const scrub = (text: string): string => {
    let out = text;
    for (const s of secrets) out = out.split(s).join(REDACTED);
    return hideUrlPasswords(out.replace(/\b(bearer)\s+[^\s"',]+/gi, `$1 ${REDACTED}`));
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
    if (format === 'json') {
      options.write(`${JSON.stringify({ time, level, msg: scrub(message), ...Object.fromEntries(entries) })}\n`);
      return;
    }
    const rest = entries.map(([k, v]) => `${k}=${typeof v === 'string' && !/[\s"=]/.test(v) && v !== '' ? v : JSON.stringify(v)}`).join(' ');
    options.write(`${time.slice(11, 23)} ${level.toUpperCase().padEnd(5)} ${scrub(message)}${rest !== '' ? ` ${rest}` : ''}\n`);
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  };
}
