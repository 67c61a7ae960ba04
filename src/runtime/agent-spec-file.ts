import { parse as parseYaml } from 'yaml';
import { AgentSpecSchema, type AgentSpec } from '../contract/agent-spec.ts';
import { decodeWire, type WireError } from '../contract/wire.ts';
import { err, type Result } from '../contract/result.ts';

/**
 * Loads an `AgentSpec` from JSON or YAML text (book: 配置 → AgentSpec 既可以从 JSON / YAML 加载).
 * Errors name the offending field.
 */
export function parseAgentSpec(text: string, format: 'json' | 'yaml' = 'json'): Result<AgentSpec, WireError> {
  if (format === 'json') return decodeWire(AgentSpecSchema, text);
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch (e) {
    return err({ code: 'invalid_json', message: (e as Error).message });
  }
  return decodeWire(AgentSpecSchema, JSON.stringify(data ?? null));
}
