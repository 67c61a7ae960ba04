import { existsSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { z } from 'zod';
import type { JsonValue } from '../../contract/json.ts';
import { unreachable } from '../../contract/never.ts';
import { ToolResults, type ToolResult } from '../../contract/tool.ts';
import { realEnv, type Env } from '../env.ts';
import { defineTool, ToolFailure, type Tool } from '../tool.ts';
import { probeSandbox, type SandboxProbe } from './probe.ts';
import { CALL_FOLDER, DEFAULT_SANDBOX_LIMITS, runSandboxed, type SandboxEnd, type SandboxJob, type SandboxLimits } from './run.ts';

/**
 * Address space a Node process reserves before it runs anything (V8's code range and heap
 * reservations, ~700 MiB here): `RLIMIT_AS` counts it, so a Node tool gets it on top of its memory
 * limit, and its JavaScript heap is held to the limit by `--max-old-space-size` besides.
 */
export const NODE_RESERVE = 1024 * 1024 * 1024;

/** What a sandboxed tool runs: a function a module exports (in Node), or a program reading its arguments as JSON on stdin. */
/**
 * What a sandboxed tool runs: a function a module exports (in Node; the call reads the module's
 * folder), or a program reading its arguments as JSON on stdin (the call reads the folder of each
 * absolute path on its command line, and `readable` besides). Nothing else of the machine but its
 * system folders (`/usr`, `/etc`) is there.
 */
export type SandboxProgram =
  | { readonly node: string; readonly export?: string }
  | { readonly command: readonly [string, ...string[]]; readonly readable?: readonly string[] };

export interface SandboxToolDef<A extends z.ZodType> {
  readonly id: string;
  readonly name?: string;
  readonly description: string;
  readonly args: A;
  readonly run: SandboxProgram;
  readonly limits?: Partial<SandboxLimits>;
}

/**
 * Runs the module's export on the arguments read from stdin and writes what it returns, as JSON, on
 * stdout; what the tool logs goes to stderr, so it cannot be taken for the result.
 */
const NODE_RUNNER = `
const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const { module, name, args } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const write = process.stdout.write.bind(process.stdout);
for (const k of ['log', 'info', 'debug', 'warn']) console[k] = console.error;
const f = (await import(module))[name];
if (typeof f !== 'function') { console.error(module + ' exports no function named ' + name); process.exit(70); }
let result;
try {
  result = await f(args);
} catch (e) {
  console.error(e instanceof Error ? (e.code !== undefined ? e.code + ': ' : '') + e.message : String(e));
  process.exit(1);
}
write(JSON.stringify(result === undefined ? null : result));
`;

const LIMIT_WORDS: Readonly<Record<Extract<SandboxEnd, { type: 'limit' }>['limit'], (l: SandboxLimits) => string>> = {
  'wall-clock': (l) => `it ran past its wall-clock limit of ${seconds(l.wallMs)}`,
  output: (l) => `its output passed its limit of ${bytes(l.outputBytes)}`,
  cpu: (l) => `it used up its CPU time limit of ${l.cpuSeconds} s`,
  memory: (l) => `it ran out of its memory limit of ${bytes(l.memoryBytes)}`,
};

const seconds = (ms: number): string => (ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`);
const bytes = (n: number): string => (n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : `${n} bytes`);
const lastLine = (text: string): string => text.trim().split('\n').at(-1)?.slice(0, 300) ?? '';

/** A contained tool's end as the model reads it: its result, or an error naming the limit it hit or how it failed. */
export function sandboxResult(tool: string, end: SandboxEnd, limits: SandboxLimits): ToolResult {
  switch (end.type) {
    case 'cancelled':
      throw new ToolFailure({ code: 'execution_failed', message: 'the call was killed: its run was cancelled' });
    case 'limit':
      return ToolResults.errorWithCode(tool, 'sandbox_limit', `the sandbox stopped the call: ${LIMIT_WORDS[end.limit](limits)}`);
    case 'exited': {
      if (end.code !== 0) {
        const said = lastLine(end.stderr);
        return ToolResults.errorWithCode(tool, 'sandbox_exit', `the call exited with code ${end.code}${said === '' ? '' : `: ${said}`}`);
      }
      let data: JsonValue;
      try {
        data = JSON.parse(end.stdout) as JsonValue;
      } catch {
        data = end.stdout;
      }
      return ToolResults.success(tool, data);
    }
    default:
      return unreachable(end, 'sandbox end');
  }
}

/**
 * The sandbox target (seed 003, `ToolExecutionTarget::Sandbox`): tools whose calls run in a separate
 * process this machine contains. Only code registers a tool here — the model and the request never
 * choose where a call runs.
 */
export class Sandbox {
  readonly #env: Pick<Env, 'sleep'>;
  readonly #limits: SandboxLimits;
  readonly #permission: string;

  constructor(probe: Extract<SandboxProbe, { ok: true }>, options: { readonly env?: Pick<Env, 'sleep'>; readonly limits?: Partial<SandboxLimits> } = {}) {
    this.#env = options.env ?? realEnv();
    this.#limits = { ...DEFAULT_SANDBOX_LIMITS, ...options.limits };
    this.#permission = probe.permissionFlag;
  }

  /** A tool whose calls run contained: its arguments checked here first, then handed to the program. */
  tool<A extends z.ZodType>(def: SandboxToolDef<A>): Tool {
    // A module named by a relative path is refused now, where the tool is made, not at its first call.
    this.#jobOf(def.run, { ...this.#limits, ...def.limits });
    // defineTool's descriptor and argument check (`invalid_arguments` naming the field), with the call run here.
    const tool = defineTool({
      id: def.id,
      ...(def.name !== undefined ? { name: def.name } : {}),
      description: def.description,
      args: def.args,
      execute: (args, ctx) => this.call(def.id, def.run, args as JsonValue, ctx.signal, def.limits),
    });
    return { ...tool, target: 'sandbox' };
  }

  /**
   * Runs `program` contained on `args` (the tool's own limits over the sandbox's): the result the
   * model reads for a call of tool `tool` — for a tool whose program depends on its arguments, as a
   * skill's script does.
   */
  async call(tool: string, program: SandboxProgram, args: JsonValue, signal: AbortSignal, limits?: Partial<SandboxLimits>): Promise<ToolResult> {
    const held = { ...this.#limits, ...limits };
    return sandboxResult(tool, await runSandboxed(this.#jobOf(program, held)(args), held, this.#env, signal), held);
  }

  #jobOf(program: SandboxProgram, limits: SandboxLimits): (args: JsonValue) => SandboxJob {
    if ('command' in program) {
      const readable = [...program.command.flatMap(foldersOf), ...(program.readable ?? [])];
      return (args) => ({ argv: program.command, input: JSON.stringify(args), readable });
    }
    if (!isAbsolute(program.node)) throw new Error(`a sandboxed Node tool names its module by an absolute path: ${program.node}`);
    const module = resolve(program.node);
    const argv = [
      process.execPath,
      this.#permission,
      `--allow-fs-read=${dirname(module)}`,
      `--allow-fs-write=${CALL_FOLDER}`,
      '--no-warnings',
      `--max-old-space-size=${Math.max(16, Math.floor(limits.memoryBytes / (1024 * 1024)))}`,
      '--input-type=module',
      '-e',
      NODE_RUNNER,
    ];
    // Node itself, where it is not under the system folders (an install in /opt, say).
    const runtime = /^\/(usr|bin|sbin|lib)\//.test(process.execPath) ? [] : [dirname(process.execPath)];
    const readable = [dirname(module), ...runtime];
    return (args) => ({ argv, input: JSON.stringify({ module, name: program.export ?? 'default', args }), reserveBytes: NODE_RESERVE, readable });
  }
}

/** The host folder a command-line word names, if it is an absolute path that is there: a file's folder, or the folder itself. */
function foldersOf(word: string): string[] {
  if (!isAbsolute(word) || !existsSync(word)) return [];
  return [statSync(word).isDirectory() ? word : dirname(word)];
}

/** This machine cannot contain a tool: the message is the one line saying why. */
export class SandboxRefused extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'SandboxRefused';
  }
}

/**
 * The sandbox on this machine (probed once per call of this function), or a `SandboxRefused`
 * thrown with the one line saying why it cannot contain a tool here — so an app that registers
 * sandboxed tools does not start where they would not be contained.
 */
export function openSandbox(
  options: { readonly env?: Pick<Env, 'sleep'>; readonly limits?: Partial<SandboxLimits>; readonly probe?: SandboxProbe } = {},
): Sandbox {
  const probe = options.probe ?? probeSandbox();
  if (!probe.ok) throw new SandboxRefused(probe.reason);
  return new Sandbox(probe, options);
}
