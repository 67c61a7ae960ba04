import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { perConversation } from '../providers/per-conversation.ts';
import { parseScript, ScriptedLlm, type ScriptStep } from '../providers/scripted.ts';
import type { LlmExecutor } from '../runtime/llm.ts';

/**
 * A provider that answers from a script (docs/scripted-models.md) — steps, or a JSON or YAML file
 * (a path, or a URL such as `new URL('./script.yaml', import.meta.url)`) — each thread from the
 * script's start, going on where the thread's earlier turns left it. No key, no network: what an
 * app's spec and its first run answer with.
 */
export function scriptedProvider(script: readonly ScriptStep[] | string | URL): LlmExecutor {
  const steps =
    typeof script === 'string' || script instanceof URL
      ? (() => {
          const file = script instanceof URL ? fileURLToPath(script) : script;
          return parseScript(readFileSync(file, 'utf8'), extname(file) === '.json' ? 'json' : 'yaml');
        })()
      : parseScript(JSON.stringify(script), 'json');
  return perConversation((turnsTaken) => new ScriptedLlm(steps.slice(turnsTaken), { record: false }));
}
