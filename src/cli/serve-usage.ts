// Apart from the command, so `awaken --help` prints it without loading the server.
export const SERVE_USAGE = `usage: awaken serve [options]

  --app FILE         your own agents, tools, plugins, models and providers: an ES module in
                     TypeScript or JavaScript, loaded without a build (docs/your-own-agent.md);
                     they are served in place of the demo agent, and --config may name them
  --config FILE      server settings, agents, models and providers (YAML; docs/server.md); flags
                     and the PORT and HOST variables win over its server settings
  --port N           the port to listen on (default: $PORT, else 3000; 0 picks a free one)
  --host H           the interface to bind (default: $HOST, else 127.0.0.1)
  --store S          sqlite:./data/awaken.db (default), file:DIR, postgres://user@host/db[?prefix=p],
                     memory; a SQLite file's directory must exist (only the default one is created)
  --model M          the demo agent's model: PROVIDER:MODEL — openai:gpt-4o-mini, anthropic:…,
                     google:…, mistral:…, ollama:… (docs/providers.md: the package and key each
                     needs) — or scripted:FILE / transcript:FILE, run from its start in each thread
                     (docs/scripted-models.md); default: a provider key, else the bundled recording
  --cors-origin U    an origin whose pages may call the API (repeatable; * for any); pages on
                     localhost, 127.0.0.1 and [::1] always may
  --allowed-host H   a host name requests may name in Host besides the loopback ones (repeatable;
                     * turns the check off); the --host you bind is allowed
  --insecure         bind a non-loopback --host without API tokens (anyone who reaches the port
                     can then read and drive every thread)
  --policy P         a new run on a busy thread: reject (409, default) or supersede (cancel the old one)
  --recovery R       a run a previous process left running (killed, crashed): resume (default: it
                     goes on from its last durable point) or interrupt (it ends as interrupted);
                     an agent's own recovery wins for its runs
  --lease-ms N       how long a run's thread lease and a claimed mailbox job stay held without
                     renewal: a killed instance's threads are free again after it (default: 10000
                     for runs, 30000 for jobs)
  --sweep-ms N       how often expired leases are reclaimed (default: 5000 for runs, 30000 for jobs)
  --log-level L      debug, info (default), warn, error or silent
  --log-format F     pretty (default) or json (one object per line)
  --record DIR       write a transcript of every run served to DIR/<thread>--<run>.jsonl, to replay
                     later with awaken replay (the ports' traffic; never a key or a token); the
                     inspector (/inspector) shows their timelines
  --otel URL         export every agent's runs, inferences and tool calls as OpenTelemetry spans
                     and metrics (GenAI conventions) over OTLP/HTTP: spans to URL, e.g.
                     http://127.0.0.1:4318/v1/traces, metrics to its /v1/metrics (or as
                     OTEL_EXPORTER_OTLP_ENDPOINT says; the packages: docs/observability.md)
  --otel-content     let those spans carry the messages, tool arguments and results (off by
                     default: they may hold what users wrote; config server.otel_content)

It logs to stderr: one line per request (method, route, status, duration, thread and run), one when
a run starts and when it ends (how), and every provider or store failure with its cause. API keys,
bearer tokens and URL passwords never appear in a line.

Several instances may share one PostgreSQL store: they share thread logs (follow a run from any of
them), cancel and decide each other's runs, and take over each other's mailbox jobs when a lease
expires.

The demo agent answers with OpenAI (OPENAI_API_KEY, OPENAI_MODEL, OPENAI_BASE_URL) or Anthropic
(ANTHROPIC_API_KEY, ANTHROPIC_MODEL) when a key is set; without one it replays the bundled recorded
conversation (fixtures/cassettes: a get_weather call, then the answer).
`;
