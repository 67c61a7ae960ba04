import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { LlmExecutor } from '../runtime/llm.ts';
import { aiSdkExecutor } from './ai-sdk.ts';

/**
 * The common AI SDK providers, by the `provider:model` strings `awaken serve --model` and a config's
 * `server.model` take (`openai:gpt-4o-mini`, `anthropic:claude-3-5-haiku-latest`,
 * `google:gemini-2.0-flash`, `mistral:mistral-small-latest`, `ollama:qwen2.5`). Each provider package
 * is an optional peer dependency, loaded when asked for, of the generation whose models implement
 * the v3 language-model interface the adapter takes (the `ai@6` one); its key comes from the
 * environment variable the provider documents.
 */
export interface CatalogEntry {
  /** The package to install, with its major. */
  readonly package: string;
  /** The variable holding the API key (none for a local server). */
  readonly keyEnv?: string;
  /** Variables that change the endpoint. */
  readonly baseUrlEnv?: string;
  /** The endpoint the provider package uses when the variable is not set (where its requests go: `server.address`). */
  readonly defaultBaseUrl: string;
  /**
   * The provider's name in the GenAI semantic conventions (`gen_ai.provider.name`): that of the API
   * it speaks — Ollama speaks OpenAI's chat API, the conventions name no Ollama — the host telling
   * which server it is.
   */
  readonly providerName: string;
  readonly make: (settings: ProviderSettings) => Promise<(modelId: string) => LanguageModelV3>;
}

interface ProviderSettings {
  readonly apiKey?: string;
  readonly baseURL?: string;
  readonly fetch?: typeof fetch;
}

/** `{...}` without the keys whose value is undefined (the providers' settings are exact optional types). */
const defined = <T extends object>(o: T): { [K in keyof T]: Exclude<T[K], undefined> } =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as { [K in keyof T]: Exclude<T[K], undefined> };

export const CATALOG: Readonly<Record<string, CatalogEntry>> = {
  openai: {
    package: '@ai-sdk/openai@3',
    keyEnv: 'OPENAI_API_KEY',
    baseUrlEnv: 'OPENAI_BASE_URL',
    defaultBaseUrl: 'https://api.openai.com/v1',
    providerName: 'openai',
    make: async (s) => (await import('@ai-sdk/openai')).createOpenAI(defined(s)),
  },
  anthropic: {
    package: '@ai-sdk/anthropic@3',
    keyEnv: 'ANTHROPIC_API_KEY',
    baseUrlEnv: 'ANTHROPIC_BASE_URL',
    defaultBaseUrl: 'https://api.anthropic.com/v1',
    providerName: 'anthropic',
    make: async (s) => (await import('@ai-sdk/anthropic')).createAnthropic(defined(s)),
  },
  google: {
    package: '@ai-sdk/google@3',
    keyEnv: 'GOOGLE_GENERATIVE_AI_API_KEY',
    baseUrlEnv: 'GOOGLE_GENERATIVE_AI_BASE_URL',
    defaultBaseUrl: 'https://generativelanguage.googleapis.com/v1beta',
    providerName: 'gcp.gemini',
    make: async (s) => (await import('@ai-sdk/google')).createGoogleGenerativeAI(defined(s)),
  },
  mistral: {
    package: '@ai-sdk/mistral@3',
    keyEnv: 'MISTRAL_API_KEY',
    baseUrlEnv: 'MISTRAL_BASE_URL',
    defaultBaseUrl: 'https://api.mistral.ai/v1',
    providerName: 'mistral_ai',
    make: async (s) => (await import('@ai-sdk/mistral')).createMistral(defined(s)),
  },
  // Ollama speaks the OpenAI chat API on its own port, without a key.
  ollama: {
    package: '@ai-sdk/openai-compatible@2',
    baseUrlEnv: 'OLLAMA_BASE_URL',
    defaultBaseUrl: 'http://127.0.0.1:11434/v1',
    providerName: 'openai',
    make: async (s) => {
      const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
      const provider = createOpenAICompatible(
        defined({ name: 'ollama', baseURL: s.baseURL ?? 'http://127.0.0.1:11434/v1', fetch: s.fetch, includeUsage: true }),
      );
      return (modelId: string) => provider(modelId);
    },
  },
};

/** Why a `provider:model` string cannot be served: the words for the user, and whether it is a missing package. */
export class CatalogError extends Error {
  readonly reason: 'unknown_provider' | 'missing_key' | 'missing_package';
  constructor(reason: CatalogError['reason'], message: string) {
    super(message);
    this.reason = reason;
  }
}

/** Whether a model string names a catalog provider (`openai:…`), not a file (`scripted:…`). */
export const isCatalogModel = (spec: string): boolean => /^[a-z][a-z0-9-]*:/.test(spec) && !/^(scripted|transcript):/.test(spec);

/**
 * The model a `provider:model` string names, through the AI SDK adapter. `fetch` replaces the
 * network (the specs replay recorded wire streams through it).
 */
export async function catalogModel(
  spec: string,
  env: NodeJS.ProcessEnv,
  options: { readonly fetch?: typeof fetch } = {},
): Promise<{ readonly llm: LlmExecutor; readonly name: string; readonly note: string }> {
  const at = spec.indexOf(':');
  const providerId = spec.slice(0, at);
  const modelId = spec.slice(at + 1);
  const entry = CATALOG[providerId];
  if (at <= 0 || entry === undefined || modelId === '') {
    throw new CatalogError(
      'unknown_provider',
      `'${spec}' names no provider: use ${Object.keys(CATALOG)
        .map((p) => `${p}:MODEL`)
        .join(', ')}, scripted:FILE or transcript:FILE`,
    );
  }
  const apiKey = entry.keyEnv !== undefined ? env[entry.keyEnv] : undefined;
  if (entry.keyEnv !== undefined && (apiKey === undefined || apiKey === ''))
    throw new CatalogError('missing_key', `${spec} needs its API key in ${entry.keyEnv}`);
  // Always given, so that the package reaches the endpoint the facts name, not one it reads itself
  // from the process environment.
  const baseURL = (entry.baseUrlEnv !== undefined && env[entry.baseUrlEnv] !== '' ? env[entry.baseUrlEnv] : undefined) ?? entry.defaultBaseUrl;
  let provider: (modelId: string) => LanguageModelV3;
  try {
    provider = await entry.make({ ...(apiKey !== undefined ? { apiKey } : {}), baseURL, ...(options.fetch !== undefined ? { fetch: options.fetch } : {}) });
  } catch (e) {
    const name = entry.package.replace(/@\d+$/, '');
    if ((e as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' && String((e as Error).message).includes(name)) {
      throw new CatalogError('missing_package', `${spec} needs ${entry.package} (an optional peer dependency of awaken-ts): npm install ${entry.package}`);
    }
    throw e;
  }
  const facts = { providerName: entry.providerName, baseURL };
  return { llm: aiSdkExecutor(provider(modelId), facts), name: modelId, note: `${providerId} (${modelId}) through the AI SDK adapter` };
}
