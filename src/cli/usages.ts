// Every command's usage text but serve's (serve-usage.ts), in a module that imports nothing: `awaken
// --help` prints them all without loading a command. Each command module re-exports its own.

export const RUN_USAGE = `usage: awaken run --model scripted:FILE|transcript:FILE [--agent demo] [--format jsonl|pretty] [--decide approve|deny] "message"
       awaken run --app FILE [--agent ID] [--format jsonl|pretty] [--decide approve|deny] "message"

  --model scripted:FILE     a scripted model (JSON or YAML steps; docs/scripted-models.md)
  --model transcript:FILE   the model answers of a recorded transcript, in order (docs/transcript-format.md)
  --app FILE                your own agents, tools, plugins, models and providers (an ES module in
                            TypeScript or JavaScript, loaded without a build): its agent runs on
                            its own model, in place of the demo agent (no --model then)
  --agent ID                the agent to run (default: demo, or the app's first)
  --format jsonl|pretty     one canonical AgentEvent per line (default), or readable lines
  --decide approve|deny     answer every suspended tool call; without it a suspension ends the run
`;

export const RECORD_USAGE = `usage: awaken record --out FILE -- [run] <awaken run arguments>

Runs like \`awaken run\` with every port recorded, and writes the transcript to FILE
(docs/transcript-format.md). Replay it with \`awaken replay FILE\`. A run of an app's agent
(\`-- run --app APP …\`) records the app's file and version, and each plugin a \`pluginFactory\` made
with its factory and config: replay it with \`awaken replay --app APP FILE\`.
`;

export const REPLAY_USAGE = `usage: awaken replay [--app FILE] FILE|DIR… [--format table|pretty|json] [--json]
       awaken replay [--app FILE] DIR --baseline [--expect FILE] [--json]
       awaken replay [--app FILE] FILE --fork-at STEP [--edit PATH=JSON]… [--model M] [--out FILE]

Replays each transcript (a DIR: every *.jsonl under it) and compares the new event stream with the
recorded one byte for byte.
--format table (default) lists the files and each divergence; pretty shows where each one left the
recording side by side, the recorded record or event beside what the replay did now (| changed,
< only recorded, > only now); json (also --json) prints the reports.
--app FILE: the app the runs came from; its plugins (each made again by its factory from the
recorded config) and stop policies run beside the built-in plugins.
--baseline: the upgrade gate. Replays every transcript under DIR (*.jsonl) — with --app, each
run whose agent the app has with the app's config of it — and sorts each divergence into a class:
prompt, tool_arguments, tool_results, state, events, termination, history (a run that cannot be
replayed at all is unreplayable, and never accepted).
--expect FILE: a manifest (YAML or JSON; schemas/replay-expectations.schema.json) of the
divergences a change was meant to make, each { runs, class, why }; those are accepted.
--fork-at STEP: replays FILE to the end of STEP (as recorded, or the fork is refused), applies each
--edit (a JSON Pointer into /agent, /messages, /state or /plugins, and a JSON value; /messages/-
appends) and goes on from there, writing the child transcript to --out (default FILE.fork-STEP.jsonl).
The recording answers while the run asks what it asked; from the first request that differs, --model
does (scripted:FILE, transcript:FILE, or a provider's model: openai:MODEL, anthropic:MODEL,
google:MODEL, mistral:MODEL, ollama:MODEL, its key in the environment as awaken serve reads it), and
a call the recording does not answer runs the app's tool.
Exit 0 iff every file replays identically (with --baseline: or its divergence is accepted; with
--fork-at: the fork was written); 66 when a FILE, DIR, manifest or the app cannot be read, 65 when one
is no transcript, names a plugin or stop policy that is neither built in nor in the app, or the
manifest is wrong (naming the field); with --fork-at 64 when the step, an edit or a missing --model or
tool is the problem, 65 when the run cannot go on from the step, 1 when it no longer replays up to it.
`;

export const INSPECT_USAGE = `usage: awaken inspect FILE.jsonl [--json] [--state]

Prints a recorded run's timeline (docs/inspector.md): each step's inference (model, duration, tokens,
the request's size, the answer), each tool call (arguments, progress, output, result, duration),
suspensions and decisions, the state's changes at each step (--state: every change, not only how
many), and how the run ended. --json prints the timeline as data. The same view in a browser:
awaken serve --record DIR, then /inspector.
`;

export const ENCODE_USAGE = `usage: awaken encode --protocol ai-sdk-v6|ag-ui|a2a|mcp|acp < events.jsonl

Reads AgentEvent JSONL (one canonical event per line) on stdin and writes what the server sends for
that run: for ai-sdk-v6 and ag-ui, the SSE response body; for a2a, the SSE body of a
message:stream response (one data: frame per A2A 1.0 StreamResponse); for mcp, NDJSON of the JSON-RPC messages
of one tools/call with request id 1 (progress notifications for token 1, then the response); for
acp, NDJSON of the JSON-RPC messages of one session/prompt with request id 1 in session session-1
(session/update notifications, session/request_permission requests, then the response).
`;

export const CONFORMANCE_USAGE = `usage: awaken conformance [--protocol ai-sdk-v6|ag-ui|a2a|mcp|acp] [--json]

Encodes every stream of conformance/streams/ and has each protocol's official library judge it
(all available protocols unless --protocol names one).
Exit 1 on an unexpected failure, or when an expected failure starts passing.
`;

export const JUDGE_USAGE = `usage: awaken judge --protocol P FILE…                   judge captured response bodies
       awaken judge --protocol P --url URL [scenario]         drive a live server, then judge
       awaken judge --protocol acp --command CMD [scenario]   drive an agent process (stdio)

Has the protocol's official library judge what a server sent: P is ai-sdk-v6, ag-ui, a2a, mcp or acp.
A FILE is one response body as it came off the wire (an SSE body; for mcp and acp, the server's
JSON-RPC messages of one call or prompt as NDJSON); several FILEs are the turns of one conversation,
in order. With --url (or --command) the official client holds the scenario and records the bodies.

scenario:
  --message TEXT     the user message (default: "Hello!")
  --approve, --deny  answer the first approval the server asks for
  --then TEXT        a second user message, after the first turn (and its approval)
  --token T          sent as "authorization: Bearer T"
  --tool NAME        mcp: the tool to call (default: the first listed)
  --save DIR         write each recorded body to DIR/turn-N.sse (or .ndjson), to judge again later

Prints a table of checks — schema, ordering, closure, terminal, client, multi-turn — and each finding
with its turn, frame number and a quote of the frame; --json prints the same as JSON.
A body that looks like another protocol's is named as such (try that --protocol), exit 64; an
--approve or --deny the conversation gave no occasion for is noted under the report.
Exit 0 when every check passes, 1 when one fails or the server refuses the scenario, 66 when a FILE
cannot be read, 69 when the server does not answer (or drops the connection: its cause is printed)
or the judge's library is not installed.
`;

export const FUZZ_USAGE = `usage: awaken fuzz --plugin FILE [--runs N] [--seed S] [--path P] [--json]
       awaken fuzz --app FILE --plugin NAME [--runs N] [--seed S] [--path P] [--json]

Fuzzes a plugin: its hooks over generated phase inputs and states (the same input gives the same
commands, whatever order their promises settle in; it writes only the keys it registered; its
actions converge within the round bound) and the laws of its state keys (commutative keys merge in
any order, exclusive keys conflict, apply is pure, the codec and persistence round-trip).

FILE is an ES module exporting the plugin (default export or \`plugin\`; a function is called to make
it) and, optionally, \`fuzz\`: { updates: { "<key name>": <fast-check arbitrary of its updates> } }.
With --app FILE, --plugin NAME is the app's plugin of that name, and the app's module may export
\`fuzz\` the same way.
A failure prints the shrunk counterexample and the seed and path that replay it (--seed S --path P).
Exit 0 when every check passes, 1 when one fails, 65 when FILE exports no plugin (or the app is
wrong), 66 when it cannot be read, 64 when the app has no plugin NAME.
`;

export const BENCH_USAGE = `usage: awaken bench --model scripted:FILE [--app FILE] [--config awaken.yaml] [--agent ID] [--plugin FILE]… [--steps 10,100,1000] [--rounds R] [--json]

Benchmarks an agent with its plugins the fair way: on the default Env, against floor-bare and
floor-phased running the same scripted model and the same tools, interleaved in rounds in one
process. The script's tool-calling steps are repeated to make N steps, its last text step ends the
run (a script that suspends or stops early is refused). Prints µs per step, × floor-phased (median
and min of the per-round ratios), KiB allocated per step, and the plugin hooks that cost most.

  --app FILE      your own agents, tools and plugins (an ES module in TypeScript or JavaScript):
                  its agent is measured with its tools and plugins, in place of the demo agent
  --config FILE   agents as \`awaken serve --config\` reads them (default: the built-in demo agent);
                  beside --app they may name the app's models and plugins
  --agent ID      the agent to measure (default: demo, or the app's first)
  --plugin FILE   an ES module exporting a plugin (default export or \`plugin\`): registered under its
                  name and active for the agent (as if its plugin_ids named it)
  --steps LIST    the run lengths N (default 10,100,1000)
  --rounds R      rounds per N (default 15)
  --json          the report as JSON, for a CI trend file
`;

export const MCP_USAGE = `usage: awaken mcp [--stdio] --model scripted:FILE|transcript:FILE [--agent demo]
       awaken mcp [--stdio] --config awaken.yaml [--model M]
       awaken mcp [--stdio] --app FILE [--config awaken.yaml] [--agent ID]

Serves the agent as an MCP tool (protocol 2025-11-25) over stdio: newline-delimited JSON-RPC on
stdin/stdout (a line that is not JSON-RPC is answered with -32700 or -32600), logs on stderr. The tool takes {message}; while the run streams it sends progress
notifications, then the result: the final text, structuredContent {termination, runId, threadId},
and isError when the run did not complete. Each call runs the model file from its start.

With --config, the agents of an \`awaken serve\` config file (docs/server.md) are the tools, beside
the demo agent (its model: --model, else the file's server.model, else as awaken serve picks it):
each described by its description, on the file's providers, models, plugins, skills and MCP
servers. Each call runs on a thread of its own, so a scripted model runs from its start.

With --app, the agents of your app (an ES module in TypeScript or JavaScript, loaded without a
build) are the tools, on the app's models, tools and plugins, in place of the demo agent (no
--model then); --agent ID serves that one alone. A --config beside it adds the file's agents, which
may name the app's models and plugins.
`;

export const ACP_USAGE = `usage: awaken acp --model scripted:FILE|transcript:FILE
       awaken acp --app FILE [--agent ID]

Serves the demo agent as an ACP v1 agent over stdio (newline-delimited JSON-RPC; logs on stderr):
initialize, session/new, session/prompt (session/update notifications, session/request_permission
for a suspended tool call — "approve" resumes it, anything else cancels it — then the stop reason)
and session/cancel. A session is one conversation: its prompts run one after another on its thread,
and its model file runs from its start in each session; session/load replays a session's
conversation (its user and agent messages, its tool calls) as session updates.

With --app, the agent is your app's (an ES module in TypeScript or JavaScript, loaded without a
build): its first, or the one --agent names, on the app's models, tools and plugins (no --model
then); each session is a thread of its own, so a scripted provider runs from its start in each.
`;

export const DEV_USAGE = `usage: awaken dev --app FILE [awaken serve options]

Serves your app as \`awaken serve --app FILE\` does, and loads it again whenever a source file in its
folder changes (node_modules and dot folders aside): new runs use the new code, runs in flight
finish on the code they started with, and a run waiting for a decision resumes on the code that is
current when its decision comes. A version that does not load keeps the last good one serving and
says why (file and line, or field). Runs are recorded (--record) into a temporary folder unless
--record names one, so the inspector shows every run's timeline and the app version that ran it.
`;
