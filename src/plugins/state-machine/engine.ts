import type { JsonValue } from '../../contract/json.ts';
import type { ToolResult } from '../../contract/tool.ts';
import { compilePattern, parsePattern, resolvePath, valueToString, type PatternMatcher } from '../../core/pattern/index.ts';
import type { ContextTarget } from '../../runtime/loop-keys.ts';
import { resultTextMatches } from '../reminder.ts';
import { declaredStates, parseTemplate, type MachineEntry, type StateMachineConfig, type Template, type When } from './config.ts';

/**
 * The machines, compiled, and what they decide: pure functions of the config, the instance states
 * and one call. The plugin (plugin.ts) wires them to the gate, the after-tool hook and the run-end
 * guard.
 */

export type ViolationAction = 'deny' | 'ask' | 'warn';

export interface CompiledTransition {
  readonly index: number;
  readonly on: PatternMatcher;
  readonly from: ReadonlySet<string>;
  readonly to: string;
  readonly when: (r: ToolResult) => boolean;
  readonly emit:
    | { readonly target: ContextTarget; readonly content: Template; readonly cooldown: number; readonly role: 'system' | 'user' | 'assistant' }
    | undefined;
  readonly action: ViolationAction;
  readonly reason: Template | undefined;
}

export interface CompiledMachine {
  readonly name: string;
  readonly scope: 'thread' | 'run';
  readonly key: Template;
  readonly normalize: (key: string) => string;
  readonly initial: string;
  readonly strict: boolean;
  readonly onUnmatched: string | null;
  readonly terminal: ReadonlySet<string>;
  readonly states: ReadonlySet<string>;
  readonly transitions: readonly CompiledTransition[];
}

export interface CompiledConfig {
  readonly machines: readonly CompiledMachine[];
  readonly continuation: { readonly max: number; readonly message: string };
}

/** Instance states: machine → instance key → state. */
export type Instances = { readonly [machine: string]: { readonly [key: string]: string } };

// ---- compiling -------------------------------------------------------------------------------------------

const templateOf = (text: string): Template => {
  const t = parseTemplate(text);
  return t.ok ? t.value : [text];
};

function whenOf(when: When): (r: ToolResult) => boolean {
  if (when === 'any') return () => true;
  if (when === 'success' || when === 'error') return (r) => r.status === when;
  const status = when.status === undefined || when.status === 'any' ? undefined : when.status;
  const content = when.content;
  return (r) => (status === undefined || r.status === status) && (content === undefined || resultTextMatches(content, r));
}

/** `path`: `.`/`..` and repeated separators collapsed (`\` read as `/`); `url`: scheme and host lower-cased, fragment dropped. */
export const NORMALIZERS: Readonly<Record<MachineEntry['key_normalizer'], (key: string) => string>> = {
  none: (k) => k,
  trim: (k) => k.trim(),
  lowercase: (k) => k.toLowerCase(),
  path: (k) => {
    const text = k.trim().replaceAll('\\', '/');
    const absolute = text.startsWith('/');
    const out: string[] = [];
    for (const part of text.split('/')) {
      if (part === '' || part === '.') continue;
      if (part === '..' && out.length > 0 && out[out.length - 1] !== '..') out.pop();
      else if (part !== '..' || !absolute) out.push(part);
    }
    return (absolute ? '/' : '') + out.join('/');
  },
  url: (k) => {
    const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^#]*)/.exec(k.trim());
    if (m === null) return k.trim().replace(/#.*$/, '');
    return `${(m[1] as string).toLowerCase()}://${(m[2] as string).toLowerCase()}${m[3] as string}`;
  },
};

export function compileMachine(m: MachineEntry): CompiledMachine {
  return {
    name: m.name,
    scope: m.scope,
    key: templateOf(m.key),
    normalize: NORMALIZERS[m.key_normalizer],
    initial: m.initial,
    strict: m.strict,
    onUnmatched: m.on_unmatched,
    terminal: new Set(m.terminal),
    states: declaredStates(m),
    transitions: m.transitions.map((t, index) => {
      const parsed = parsePattern(t.on);
      return {
        index,
        on: parsed.ok ? compilePattern(parsed.value) : () => undefined,
        from: new Set(typeof t.from === 'string' ? [t.from] : t.from),
        to: t.to,
        when: whenOf(t.when),
        emit:
          t.emit === undefined
            ? undefined
            : { target: t.emit.target, content: templateOf(t.emit.content), cooldown: t.emit.cooldown_turns, role: t.emit.role ?? 'system' },
        action: t.on_violation?.action ?? 'deny',
        reason: t.on_violation?.reason === undefined ? undefined : templateOf(t.on_violation.reason),
      };
    }),
  };
}

export function compileConfig(config: StateMachineConfig): CompiledConfig {
  return {
    machines: config.machines.map(compileMachine),
    continuation: { max: config.continuation?.max_continuations ?? 0, message: config.continuation?.message ?? 'Finish the protocol work: {summary}' },
  };
}

// ---- templates and keys --------------------------------------------------------------------------------

const holeValue = (args: JsonValue, path: Template[number]): string | undefined => {
  if (typeof path === 'string') return path;
  const found = resolvePath(args, path.path);
  return found.length === 0 ? undefined : valueToString(found[0] as JsonValue);
};

/** The template with each hole filled from the call's arguments (a hole with no value is left as written). */
export const render = (t: Template, args: JsonValue): string =>
  t.map((part) => holeValue(args, part) ?? (typeof part === 'string' ? part : part.text)).join('');

/** The instance key of a call, normalized; undefined when a hole has no value (the call has no instance of this machine). */
export function instanceKey(m: CompiledMachine, args: JsonValue): string | undefined {
  let out = '';
  for (const part of m.key) {
    const v = holeValue(args, part);
    if (v === undefined) return undefined;
    out += v;
  }
  return m.normalize(out);
}

export const stateOf = (m: CompiledMachine, instances: Instances, key: string): string => instances[m.name]?.[key] ?? m.initial;

// ---- the gate ------------------------------------------------------------------------------------------------

export interface Violation {
  readonly machine: string;
  readonly key: string;
  readonly state: string;
  readonly action: ViolationAction;
  readonly reason: string;
  /** The transition whose `from` the state is not in (absent: a strict machine's unmatched call). */
  readonly transition?: number;
}

const RANK: Readonly<Record<ViolationAction, number>> = { warn: 1, ask: 2, deny: 3 };

/**
 * Each machine's violation by this call, if any, in machine order. A call matches a machine when
 * one of its transitions' `on` matches and its key renders; it violates it when the instance is in
 * none of those transitions' `from` states (the first matching transition's `on_violation` says
 * what to do), or, in a strict machine, when it has a key and matches no transition at all.
 */
export function violations(config: CompiledConfig, instances: (m: CompiledMachine) => Instances, tool: string, args: JsonValue): Violation[] {
  const out: Violation[] = [];
  for (const m of config.machines) {
    const matching = m.transitions.filter((t) => t.on(tool, args) !== undefined);
    if (matching.length === 0 && !m.strict) continue;
    const key = instanceKey(m, args);
    if (key === undefined) continue;
    const state = stateOf(m, instances(m), key);
    if (matching.length === 0) {
      out.push({
        machine: m.name,
        key,
        state,
        action: 'deny',
        reason: `'${tool}' is not a step of '${m.name}' (${key === '' ? 'state' : `${key} is`} ${state})`,
      });
      continue;
    }
    if (matching.some((t) => t.from.has(state))) continue;
    const first = matching[0] as CompiledTransition;
    const reason =
      first.reason === undefined
        ? `'${tool}' is not allowed while '${m.name}'${key === '' ? '' : ` for ${key}`} is in state '${state}'`
        : render(first.reason, args);
    out.push({ machine: m.name, key, state, action: first.action, reason, transition: first.index });
  }
  return out;
}

/** The strictest of several violations (deny > ask > warn; the first of equals). */
export function strictest(vs: readonly Violation[]): Violation | undefined {
  let best: Violation | undefined;
  for (const v of vs) if (best === undefined || RANK[v.action] > RANK[best.action]) best = v;
  return best;
}

// ---- after the call -------------------------------------------------------------------------------------------

export interface Move {
  readonly machine: string;
  readonly scope: 'thread' | 'run';
  readonly key: string;
  readonly from: string;
  readonly to: string;
  /** The transition taken (absent: the machine's `on_unmatched` fallback). */
  readonly transition?: number;
  readonly emit?: {
    readonly key: string;
    readonly target: ContextTarget;
    readonly content: string;
    readonly cooldown: number;
    readonly role: 'system' | 'user' | 'assistant';
  };
}

/**
 * What a finished call does to each machine: the first transition whose `on` matches and whose
 * `from` holds the instance's state fires if its `when` matches the result (the state becomes `to`,
 * its reminder is emitted); when it does not, the state becomes `on_unmatched` if the machine has
 * one. A call that violated the machine (and ran anyway: warn, or asked and approved) moves nothing;
 * a suspended result moves nothing either (the call has not finished).
 */
export function moves(config: CompiledConfig, instances: (m: CompiledMachine) => Instances, tool: string, args: JsonValue, result: ToolResult): Move[] {
  if (result.status === 'pending') return [];
  const out: Move[] = [];
  for (const m of config.machines) {
    const key = instanceKey(m, args);
    if (key === undefined) continue;
    const state = stateOf(m, instances(m), key);
    const t = m.transitions.find((x) => x.from.has(state) && x.on(tool, args) !== undefined);
    if (t === undefined) continue;
    if (t.when(result)) {
      const emit =
        t.emit === undefined
          ? undefined
          : {
              key: `state_machine.${m.name}.${t.index}`,
              target: t.emit.target,
              content: render(t.emit.content, args),
              cooldown: t.emit.cooldown,
              role: t.emit.role,
            };
      out.push({ machine: m.name, scope: m.scope, key, from: state, to: t.to, transition: t.index, ...(emit !== undefined ? { emit } : {}) });
    } else if (m.onUnmatched !== null) {
      out.push({ machine: m.name, scope: m.scope, key, from: state, to: m.onUnmatched });
    }
  }
  return out;
}

// ---- the run-end guard ---------------------------------------------------------------------------------------

export interface Unfinished {
  readonly machine: string;
  readonly key: string;
  readonly state: string;
}

/** Instances of machines with terminal states that are in none of them, in machine then key order. */
export function unfinished(config: CompiledConfig, instances: (m: CompiledMachine) => Instances): Unfinished[] {
  const out: Unfinished[] = [];
  for (const m of config.machines) {
    if (m.terminal.size === 0) continue;
    const map = instances(m)[m.name] ?? {};
    for (const key of Object.keys(map).sort()) {
      const state = map[key] as string;
      if (!m.terminal.has(state)) out.push({ machine: m.name, key, state });
    }
  }
  return out;
}

export const summaryOf = (open: readonly Unfinished[]): string => open.map((u) => `${u.machine}${u.key === '' ? '' : ` ${u.key}`}: ${u.state}`).join('; ');
