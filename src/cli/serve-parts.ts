import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { chunksOf, cassetteResponse } from '../providers/cassette.ts';
import { aiSdkExecutor } from '../providers/ai-sdk.ts';
import type { LlmExecutor } from '../runtime/llm.ts';
import { perConversation } from '../providers/per-conversation.ts';
import { CatalogError, catalogModel, isCatalogModel } from '../providers/catalog.ts';
import { openStore } from '../stores/index.ts';
import type { Store } from '../runtime/store.ts';
import { crashAtOf, crashingStore, killSelf } from '../server/crash-at.ts';
import { CliFailure, UsageError } from './args.ts';
import { EXIT } from './exit.ts';
import { modelFactoryOf } from './run-plan.ts';

/** The default store; the only one whose directory `serve` creates. */
export const DEFAULT_STORE = 'sqlite:./data/awaken.db';

const CASSETTES = resolve(import.meta.dirname, '../../fixtures/cassettes');

/** The question the start-up hint asks of the demo agent: the one its recording answers (Oslo's forecast). */
export const DEMO_QUESTION = 'weather in Oslo?';

/**
 * The model of the demo agent: a provider when its key is set; otherwise the bundled recorded
 * conversation, replayed through the AI SDK adapter (the tool-call stream when the last message is
 * not a tool result, else the answer stream).
 */
export function demoModel(env: NodeJS.ProcessEnv): { readonly llm: LlmExecutor; readonly name: string; readonly note: string } {
  const openai = env['OPENAI_API_KEY'];
  const anthropic = env['ANTHROPIC_API_KEY'];
  if (openai !== undefined && openai !== '') {
    const name = env['OPENAI_MODEL'] ?? 'gpt-4o-mini';
    const provider = createOpenAICompatible({
      name: 'openai',
      baseURL: env['OPENAI_BASE_URL'] ?? 'https://api.openai.com/v1',
      apiKey: openai,
      includeUsage: true,
    });
    return { llm: aiSdkExecutor(provider(name)), name, note: `OpenAI (${name}) through the AI SDK adapter` };
  }
  if (anthropic !== undefined && anthropic !== '') {
    const name = env['ANTHROPIC_MODEL'] ?? 'claude-3-5-haiku-latest';
    return { llm: aiSdkExecutor(createAnthropic({ apiKey: anthropic })(name)), name, note: `Anthropic (${name}) through the AI SDK adapter` };
  }
  const tool = chunksOf(readFileSync(resolve(CASSETTES, 'openai-compatible-weather-tool.chunks.jsonl'), 'utf8'));
  const answer = chunksOf(readFileSync(resolve(CASSETTES, 'openai-compatible-weather-answer.chunks.jsonl'), 'utf8'));
  const recordedFetch: typeof fetch = async (_url, init) => {
    const body = JSON.parse(typeof init?.body === 'string' ? init.body : '{}') as { messages?: { role?: string }[] };
    const last = body.messages?.at(-1)?.role;
    return cassetteResponse(last === 'tool' ? answer : tool, 'openai-compatible');
  };
  const provider = createOpenAICompatible({
    name: 'recorded',
    baseURL: 'http://recorded.invalid/v1',
    apiKey: 'none',
    fetch: recordedFetch,
    includeUsage: true,
  });
  return {
    llm: aiSdkExecutor(provider('recorded-weather')),
    name: 'recorded-weather',
    note: 'no OPENAI_API_KEY or ANTHROPIC_API_KEY set: the demo agent replays the bundled recorded conversation (fixtures/cassettes — it calls get_weather for Oslo, then answers; it does not read your message)',
  };
}

/** A model named `provider:model` (`openai:gpt-4o-mini`): its package and key must be there. */
export async function namedModel(
  spec: string,
  env: NodeJS.ProcessEnv,
  where: string,
): Promise<{ readonly llm: LlmExecutor; readonly name: string; readonly note: string }> {
  try {
    return await catalogModel(spec, env);
  } catch (e) {
    if (!(e instanceof CatalogError)) throw e;
    if (e.reason === 'unknown_provider')
      throw where === '--model' ? new UsageError(`--model: ${e.message}`) : new CliFailure(`${where}: ${e.message}`, EXIT.data);
    throw new CliFailure(e.message, EXIT.unavailable);
  }
}

/** The demo agent's model: `model` (`provider:model`, or a file run from its start in each thread; `where` names the option or field it came from), else `demoModel`. */
export async function demoAgentModel(
  model: string | undefined,
  env: NodeJS.ProcessEnv,
  where: string,
): Promise<{ readonly llm: LlmExecutor; readonly name: string; readonly note: string }> {
  return model === undefined ? demoModel(env) : isCatalogModel(model) ? await namedModel(model, env, where) : fileModel(model);
}

/** The demo agent's model named by `--model` (a file, run from its start in each conversation). */
function fileModel(model: string): { readonly llm: LlmExecutor; readonly name: string; readonly note: string } {
  // Read now: a file that is missing or does not parse stops the start-up.
  return {
    llm: perConversation(modelFactoryOf(model)),
    name: model.split(':')[0] as string,
    note: `${model}, run from its start in each thread`,
  };
}

/**
 * The store a `--store` spelling names. A SQLite file's directory must exist; only the default
 * one (./data) is made, and a ./data that cannot be (a file of that name, a folder the user may not
 * write) is said in one line. A store of an unknown kind is a usage mistake; one whose package is not
 * installed, unavailable; one whose directory is missing, missing input.
 */
export function storeOf(spec: string, where: string, env: NodeJS.ProcessEnv = process.env): Store {
  if (spec === DEFAULT_STORE) {
    try {
      mkdirSync(resolve('data'), { recursive: true });
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? 'unknown error';
      throw new CliFailure(
        `${where}: cannot make its folder ./data (${code}); choose another store with --store, or start where ./data can be made`,
        EXIT.unavailable,
      );
    }
  }
  if (spec.startsWith('sqlite:') && spec !== 'sqlite::memory:' && spec.length > 'sqlite:'.length) {
    const dir = dirname(resolve(spec.slice('sqlite:'.length)));
    if (!existsSync(dir)) throw new CliFailure(`${where}: the directory ${dir} does not exist (create it, or choose another path)`, EXIT.noInput);
  }
  // The chaos suite's crash hook (src/server/crash-at.ts): only a variable named for it arms it.
  const crash = env['AWAKEN_CRASH_AT'];
  const at = crash === undefined || crash === '' ? undefined : crashAtOf(crash);
  if (typeof at === 'string') throw new UsageError(at);
  const store = openStore(spec);
  if (typeof store !== 'string') return at === undefined ? store : crashingStore(store, at, killSelf);
  if (/^(postgres|postgresql):\/\//.test(spec)) throw new CliFailure(`${where}: ${store}`, EXIT.unavailable);
  if (/^(memory|sqlite:|file:)/.test(spec)) throw new CliFailure(`${where}: ${store}`, EXIT.noInput);
  throw new UsageError(`${where}: ${store}`);
}
