import { createHash } from 'node:crypto';
import type { JsonValue } from '../contract/json.ts';
import { canonicalJson } from '../core/pattern/match.ts';
import type { Registries } from '../runtime/resolve.ts';

/**
 * What an agent is, as one short string (`<agent id>@sha256:<16 hex>`): its spec, the entry of the
 * model it names, and the version of the app's code that serves it (`LoadedApp.version`), when there is one. A run records it when
 * it starts (`RunRecord.agent_digest`); a run a process left running is not taken up by an agent
 * that is no longer what it started with — its config or its code changed — since the calls and
 * answers it stored may not mean the same to the new one.
 */
export function agentDigest(registries: Pick<Registries, 'agents' | 'models'>, agentId: string, code?: string): string | undefined {
  const spec = registries.agents.get(agentId);
  if (spec === undefined) return undefined;
  const model = registries.models.get(spec.model);
  // Through JSON first: a field left undefined is no field, as in the stored config.
  const value = JSON.parse(JSON.stringify({ agent: spec, model: model ?? null, code: code ?? null })) as JsonValue;
  return `${agentId}@sha256:${createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 16)}`;
}

/**
 * The agent a digest is of (`agentDigest` names it first): the run's first agent, whatever agent it
 * went on as (a handoff) — what a take-up compares, against the digest of that agent now.
 */
export function agentOfDigest(digest: string): string | undefined {
  const at = digest.lastIndexOf('@sha256:');
  return at > 0 ? digest.slice(0, at) : undefined;
}

const cached = new WeakMap<object, Map<string, string | undefined>>();

/** `agentDigest`, computed once per published registries, agent and code version (a server starts many runs of one agent). */
export function agentDigestOf(registries: Pick<Registries, 'agents' | 'models'>, agentId: string, code?: string): string | undefined {
  let digests = cached.get(registries);
  if (digests === undefined) cached.set(registries, (digests = new Map()));
  const key = `${code ?? ''}\0${agentId}`;
  if (digests.has(key)) return digests.get(key);
  const digest = agentDigest(registries, agentId, code);
  digests.set(key, digest);
  return digest;
}
