import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { chunksOf, cassetteResponse } from '../providers/cassette.ts';
import { aiSdkExecutor } from '../providers/ai-sdk.ts';
import { AgentRuntimeBuilder } from '../runtime/agent-runtime.ts';
import { realEnv } from '../runtime/env.ts';
import type { LlmExecutor } from '../runtime/llm.ts';
import { createHttpApp } from '../server/http.ts';
import { Mailbox } from '../server/mailbox.ts';
import { listen } from '../server/node.ts';
import { savedConfig } from '../server/config-routes.ts';
import { recoverRuns } from '../server/recovery.ts';
import { RunRegistry, type ConcurrencyPolicy } from '../server/run-registry.ts';
import { openBus, openStore } from '../stores/index.ts';
import { providerOf } from '../server/config-routes.ts';
import type { ModelEntry } from '../runtime/resolve.ts';
import { readServeConfig } from './serve-config.ts';
import { modelOf } from './run-plan.ts';
import { perConversation } from '../providers/per-conversation.ts';
import { checkOrigins } from '../server/access.ts';
import { hostname } from 'node:os';
import { demoAgent, DEMO_TOOLS } from './demo.ts';
import type { Io } from './run-command.ts';

export const SERVE_USAGE = `usage: awaken serve [--config awaken.yaml] [--port 3000] [--host 127.0.0.1] [--store sqlite:PATH|file:DIR|postgres://…|memory] [--model scripted:FILE|transcript:FILE] [--cors-origin URL]… [--allowed-host H]… [--policy reject|supersede] [--lease-ms N] [--sweep-ms N]

  --config FILE    server settings, agents, models and providers (YAML; flags win; docs/server.md)

  --port N         the port to listen on (default 3000; 0 picks a free one)
  --host H         the interface to bind (default 127.0.0.1)
  --store S        sqlite:./data/awaken.db (default), file:DIR, postgres://user@host/db[?prefix=p], memory
  --model M        the demo agent's model: scripted:FILE or transcript:FILE, run from its start in each
                   thread (docs/scripted-models.md); default: a provider key, else the bundled recording
  --cors-origin U  an origin whose pages may call the API (repeatable; * for any); pages on
                   localhost, 127.0.0.1 and [::1] always may
  --allowed-host H a host name requests may name in Host besides the loopback ones (repeatable; *
                   turns the check off); the --host you bind is allowed
  --policy P       a new run on a busy thread: reject (409, default) or supersede (cancel the old one)
  --lease-ms N     the mailbox lease of a claimed job (default 30000); --sweep-ms N how often expired
                   leases are reclaimed (default 30000)

Several instances may share one PostgreSQL store: they share thread logs (follow a run from any of
them), cancel and decide each other's runs, and take over each other's mailbox jobs when a lease
expires.

The demo agent answers with OpenAI (OPENAI_API_KEY, OPENAI_MODEL, OPENAI_BASE_URL) or Anthropic
(ANTHROPIC_API_KEY, ANTHROPIC_MODEL) when a key is set; without one it replays the bundled recorded
conversation (fixtures/cassettes: a get_weather call, then the answer).
`;

interface ServePlan {
  readonly config?: string;
  readonly port: number;
  readonly host: string;
  readonly store: string;
  readonly model?: string;
  readonly corsOrigins: readonly string[];
  readonly allowedHosts: readonly string[];
  readonly policy: ConcurrencyPolicy;
  readonly leaseMs?: number;
  readonly sweepMs?: number;
}

export function parseServeArgs(argv: readonly string[]): ServePlan | string {
  // A config file supplies the defaults; flags given on the command line override them.
  const configAt = argv.indexOf('--config');
  const configPath = configAt >= 0 ? argv[configAt + 1] : undefined;
  if (configAt >= 0 && configPath === undefined) return '--config needs a value';
  const file = configPath === undefined ? undefined : readServeConfig(configPath);
  if (typeof file === 'string') return file;
  let port = file?.server.port ?? 3000;
  let host = file?.server.host ?? '127.0.0.1';
  let store = file?.server.store ?? 'sqlite:./data/awaken.db';
  let policy: ConcurrencyPolicy = file?.server.policy ?? 'reject';
  let leaseMs: number | undefined = file?.server.lease_ms;
  let sweepMs: number | undefined = file?.server.sweep_ms;
  let model: string | undefined = file?.server.model;
  // Repeatable flags replace what the config file lists.
  const corsOrigins: string[] = [];
  const allowedHosts: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const v = argv[i + 1];
    if (a === '--config') {
      i++;
      continue;
    }
    if (a === '--model' || a === '--cors-origin' || a === '--allowed-host') {
      if (v === undefined) return `${a} needs a value`;
      i++;
      if (a === '--model') model = v;
      else if (a === '--cors-origin') corsOrigins.push(v);
      else allowedHosts.push(v);
      continue;
    }
    if (a === '--port' || a === '--host' || a === '--store' || a === '--policy' || a === '--lease-ms' || a === '--sweep-ms') {
      if (v === undefined) return `${a} needs a value`;
      i++;
      if (a === '--lease-ms' || a === '--sweep-ms') {
        if (!/^\d{1,9}$/.test(v) || Number(v) < 10) return `${a} must be a number of milliseconds ≥ 10, not '${v}'`;
        if (a === '--lease-ms') leaseMs = Number(v);
        else sweepMs = Number(v);
      } else if (a === '--port') {
        if (!/^\d{1,5}$/.test(v) || Number(v) > 65535) return `--port must be 0..65535, not '${v}'`;
        port = Number(v);
      } else if (a === '--host') host = v;
      else if (a === '--store') store = v;
      else {
        if (v !== 'reject' && v !== 'supersede') return `--policy must be reject or supersede, not '${v}'`;
        policy = v;
      }
    } else return `unknown argument ${a}`;
  }
  const origins = checkOrigins(corsOrigins.length > 0 ? corsOrigins : (file?.server.cors?.origins ?? []));
  if (typeof origins === 'string') return `--cors-origin: ${origins}`;
  return {
    ...(configPath !== undefined ? { config: configPath } : {}),
    port,
    host,
    store,
    ...(model !== undefined ? { model } : {}),
    corsOrigins: origins,
    allowedHosts: allowedHosts.length > 0 ? allowedHosts : (file?.server.allowed_hosts ?? []),
    policy,
    ...(leaseMs !== undefined ? { leaseMs } : {}),
    ...(sweepMs !== undefined ? { sweepMs } : {}),
  };
}

/**
 * The hosts a request may name: the configured ones, and the interface bound when it is a name or
 * an address of its own; bound to every interface (0.0.0.0, ::) with none configured, any host.
 */
export function allowedHostsOf(plan: { readonly host: string; readonly allowedHosts: readonly string[] }): string[] {
  const wildcard = plan.host === '0.0.0.0' || plan.host === '::' || plan.host === '[::]';
  if (wildcard) return plan.allowedHosts.length > 0 ? [...plan.allowedHosts] : ['*'];
  return [...plan.allowedHosts, plan.host];
}

const CASSETTES = resolve(import.meta.dirname, '../../fixtures/cassettes');

/** The question the start-up hint asks of the demo agent: the one its recording answers (Oslo's forecast). */
const DEMO_QUESTION = 'weather in Oslo?';

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
    const provider = createOpenAICompatible({ name: 'openai', baseURL: env['OPENAI_BASE_URL'] ?? 'https://api.openai.com/v1', apiKey: openai, includeUsage: true });
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
  const provider = createOpenAICompatible({ name: 'recorded', baseURL: 'http://recorded.invalid/v1', apiKey: 'none', fetch: recordedFetch, includeUsage: true });
  return {
    llm: aiSdkExecutor(provider('recorded-weather')),
    name: 'recorded-weather',
    note: 'no OPENAI_API_KEY or ANTHROPIC_API_KEY set: the demo agent replays the bundled recorded conversation (fixtures/cassettes — it calls get_weather for Oslo, then answers; it does not read your message)',
  };
}

/** The demo agent's model named by `--model` (a file, run from its start in each conversation). */
function fileModel(model: string): { readonly llm: LlmExecutor; readonly name: string; readonly note: string } | string {
  const first = modelOf(model);
  if (typeof first === 'string') return first;
  return {
    llm: perConversation(() => modelOf(model) as LlmExecutor),
    name: model.split(':')[0] as string,
    note: `${model}, run from its start in each thread`,
  };
}

/** `awaken serve`: the HTTP server on a durable store, until SIGINT/SIGTERM. */
export async function serveCommand(argv: readonly string[], io: Io, version: string, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const plan = parseServeArgs(argv);
  if (typeof plan === 'string') {
    io.err(`awaken serve: ${plan}\n${SERVE_USAGE}`);
    return 64;
  }
  const store = openStore(plan.store);
  if (typeof store === 'string') {
    io.err(`awaken serve: ${store}\n`);
    return 64;
  }
  const chosen = plan.model !== undefined ? fileModel(plan.model) : demoModel(env);
  if (typeof chosen === 'string') {
    io.err(`awaken serve: --model: ${chosen}\n`);
    return 64;
  }
  const model = chosen;
  const builder = new AgentRuntimeBuilder()
    .withEnv(realEnv())
    .withProvider('demo', model.llm)
    .withModel('demo', { provider: 'demo', model_name: model.name })
    .withThreadRunStore(store)
    .withAgentSpec(demoAgent('demo'));
  for (const tool of DEMO_TOOLS) builder.withTool(tool);
  const file = plan.config === undefined ? undefined : readServeConfig(plan.config);
  if (typeof file === 'string') {
    io.err(`awaken serve: ${file}\n`);
    return 64;
  }
  for (const [id, p] of Object.entries(file?.providers ?? {})) {
    if (p.kind !== 'scripted') {
      builder.withProvider(id, providerOf(p, env));
      continue;
    }
    const scripted = fileModel(`scripted:${p.file}`);
    if (typeof scripted === 'string') {
      io.err(`awaken serve: ${plan.config ?? ''}: providers.${id}: ${scripted}\n`);
      return 64;
    }
    builder.withProvider(id, scripted.llm);
  }
  for (const [id, m] of Object.entries(file?.models ?? {})) builder.withModel(id, m as ModelEntry);
  for (const a of file?.agents ?? []) builder.withAgentSpec(a);
  const runtime = builder.build();
  if (!runtime.ok) {
    io.err(`awaken serve: ${JSON.stringify(runtime.error)}\n`);
    return 70;
  }
  try {
    await store.listThreads({ offset: 0, limit: 1 });
  } catch (e) {
    io.err(`awaken serve: the store ${plan.store} is not usable: ${e instanceof Error ? e.message : String(e)}\n`);
    return 69;
  }
  const bus = openBus(plan.store);
  if (bus === undefined) {
    // One process per store: what a previous process left unfinished is marked at start.
    const recovered = await recoverRuns(store, Date.now());
    if (recovered.length > 0) io.err(`awaken serve: marked ${recovered.length} run(s) left unfinished by a previous process as interrupted\n`);
  }
  const registry = new RunRegistry(runtime.value, store, { policy: plan.policy, ...(bus !== undefined ? { bus } : {}) });
  await registry.attachBus();
  const consumer = `${hostname()}:${process.pid}`;
  const mailbox = new Mailbox(store, registry, runtime.value.env, {
    consumer,
    config: { ...(plan.leaseMs !== undefined ? { lease_ms: plan.leaseMs, lease_renewal_interval_ms: Math.max(5, Math.floor(plan.leaseMs / 3)) } : {}), ...(plan.sweepMs !== undefined ? { sweep_interval_ms: plan.sweepMs } : {}) },
  });
  mailbox.start();
  const adminToken = env['AWAKEN_ADMIN_TOKEN'];
  const app = createHttpApp({ runtime: runtime.value, store, registry, mailbox }, {
    version,
    savedConfig: await savedConfig(store),
    ...(adminToken !== undefined && adminToken !== '' ? { adminToken } : {}),
    processEnv: env,
    allowedHosts: allowedHostsOf(plan),
    corsOrigins: plan.corsOrigins,
  });
  io.err(`awaken serve: model: ${model.note}\n`);
  const server = await listen(app, { port: plan.port, hostname: plan.host });
  io.err(`awaken serve: listening on ${server.url} (store ${store.kind}; policy ${plan.policy}; mailbox consumer ${consumer}${bus !== undefined ? '; shared with other instances' : ''})\n`);
  io.err(`awaken serve: browsers: pages on localhost, 127.0.0.1 and [::1]${plan.corsOrigins.length > 0 ? ` and ${plan.corsOrigins.join(', ')}` : ''} may call the API (--cors-origin adds more)\n`);
  io.err(`awaken serve: try  curl -N ${server.url}/v1/runs -H 'content-type: application/json' -d '{"messages":[{"role":"user","content":"${plan.model === undefined ? DEMO_QUESTION : 'hello'}"}]}'\n`);
  await new Promise<void>((done) => {
    const stop = (): void => done();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  io.err('awaken serve: shutting down\n');
  await registry.shutdown();
  await mailbox.stop();
  await bus?.close();
  await server.close();
  await store.close();
  return 0;
}
