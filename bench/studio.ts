import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * `npm run bench:studio`: how long the inspector page takes to show a long run — from a click on the
 * run to its timeline on screen — for a 500-step and a 5,000-step transcript (median of 5 each, in
 * headless Chromium, the page built by vite and served by a real `awaken serve --record DIR`). Prints
 * a table and exits 1 when a median is over its target (500 steps: 300 ms, 5,000 steps: 1.5 s).
 *
 * The transcripts are made from a corpus run's records (fixtures/runs/46-observability-spans.jsonl:
 * its header, tools and record shapes), one step after another on a clock that ticks 5 ms a
 * reading: each step streams a line of text and calls `report` (every seventh also `fail`, which
 * fails), its request keeps the conversation so far and adds the step's turn and results, and its
 * state snapshot changes runtime keys and one key of the app's; the last step answers.
 */

const repo = resolve(import.meta.dirname, '..');
const CORPUS = join(repo, 'fixtures/runs/46-observability-spans.jsonl');

/** A transcript of `steps` steps on the thread and run its header names. */
export function syntheticTranscript(steps: number, threadId: string, runId: string): string {
  const header = JSON.parse(readFileSync(CORPUS, 'utf8').split('\n')[0] as string) as { request: Record<string, unknown> };
  header.request = { ...header.request, thread_id: threadId, run_id: runId };
  const lines: string[] = [JSON.stringify(header)];
  const put = (r: unknown): void => void lines.push(JSON.stringify(r));
  let clock = 1_700_000_000_000;
  const now = (): void => {
    clock += 5;
    put({ type: 'env', draw: 'now', value: clock });
  };
  let seq = 0;
  const event = (e: Record<string, unknown>): void => put({ type: 'event', seq: seq++, event: e });
  let llmSeq = 0;
  let kept = 0;
  let message = 0;
  const nextMessage = (): string => `message-${++message}`;
  let tokensIn = 0;
  let tokensOut = 0;
  const text = (k: string) => [{ type: 'text', text: k }];
  put({ type: 'env', draw: 'id', kind: 'thread', value: threadId });
  put({ type: 'env', draw: 'id', kind: 'run', value: runId });
  now();
  event({ event_type: 'run_start', thread_id: threadId, run_id: runId });
  let pendingMessages: unknown[] = [
    { role: 'system', content: text('You are the corpus agent.') },
    { role: 'user', content: text(`scenario: a long run of ${steps} steps`) },
  ];
  for (let i = 1; i <= steps; i++) {
    const last = i === steps;
    const fails = !last && i % 7 === 0;
    now();
    const stepMessage = nextMessage();
    event({ event_type: 'step_start', message_id: stepMessage });
    now();
    const said = last ? `Done after ${steps} steps.` : `Step ${i}: checking.`;
    event({ event_type: 'text_delta', delta: said });
    const calls = last ? [] : [{ id: `c${i}a`, name: 'report', arguments: { steps: 1 } }, ...(fails ? [{ id: `c${i}b`, name: 'fail', arguments: {} }] : [])];
    for (const c of calls) event({ event_type: 'tool_call_start', id: c.id, name: c.name });
    put({
      type: 'llm',
      seq: ++llmSeq,
      digest: `sha256:${'0'.repeat(64)}`,
      request: { model: 'scripted-main', kept, messages: pendingMessages, ...(i === 1 ? { tools: [] } : {}) },
      parts: [],
    });
    kept += pendingMessages.length;
    for (const c of calls) event({ event_type: 'tool_call_ready', id: c.id, name: c.name, arguments: c.arguments });
    now();
    const usage = { prompt_tokens: 30 + i, completion_tokens: 8, total_tokens: 38 + i };
    tokensIn += usage.prompt_tokens;
    tokensOut += usage.completion_tokens;
    event({ event_type: 'inference_complete', model: 'scripted-main', usage, duration_ms: 5 });
    const assistant = nextMessage();
    const results: unknown[] = [];
    const states: Record<string, unknown> = {};
    for (const c of calls) {
      now();
      const ok = c.name === 'report';
      const result = ok
        ? { tool_name: 'report', status: 'success', data: { steps: 1 }, message: null }
        : { tool_name: 'fail', status: 'error', data: null, message: 'the tool reported a failure' };
      put({ type: 'tool', call_id: c.id, name: c.name, arguments: c.arguments, activity: [], result });
      now();
      event({ event_type: 'tool_call_done', id: c.id, message_id: assistant, result, outcome: ok ? 'succeeded' : 'failed' });
      results.push({ id: nextMessage(), role: 'tool', content: text(ok ? '{"steps":1}' : 'the tool reported a failure'), tool_call_id: c.id });
      states[c.id] = {
        call_id: c.id,
        tool_name: c.name,
        arguments: c.arguments,
        status: ok ? 'succeeded' : 'failed',
        updated_at: clock,
        resume_mode: 'replay_tool_call',
      };
    }
    pendingMessages = [{ id: assistant, role: 'assistant', content: text(said), ...(calls.length > 0 ? { tool_calls: calls } : {}) }, ...results];
    now();
    event({
      event_type: 'state_snapshot',
      snapshot: {
        revision: i * 2,
        extensions: {
          '__runtime.run_lifecycle': { run_id: runId, status: 'running', updated_at: clock, step_count: i },
          '__runtime.stop_condition_stats': {
            stepCount: i,
            totalInputTokens: tokensIn,
            totalOutputTokens: tokensOut,
            consecutiveErrors: 0,
            lastToolNames: calls.map((c) => c.name),
            lastResponseText: said,
          },
          '__runtime.tool_call_states': states,
          notes: { checked: i, failures: Math.floor(i / 7) },
        },
      },
    });
    event({ event_type: 'step_end' });
  }
  now();
  const response = `Done after ${steps} steps.`;
  event({
    event_type: 'run_finish',
    thread_id: threadId,
    run_id: runId,
    result: { response, status: 'done', status_reason: 'natural' },
    termination: { type: 'natural_end' },
  });
  put({
    type: 'end',
    result: {
      response,
      steps,
      termination: { type: 'natural_end' },
      usage: { prompt_tokens: tokensIn, completion_tokens: tokensOut, total_tokens: tokensIn + tokensOut },
      inference_errors: [],
    },
  });
  return `${lines.join('\n')}\n`;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

async function main(): Promise<void> {
  const { build } = await import('vite');
  const { startDemoAndSlow } = await import('../spec/support/serve-process.ts');
  const { launchChromium } = await import('../spec/support/browser.ts');
  const cases = [
    { steps: 500, targetMs: 300 },
    { steps: 5000, targetMs: 1500 },
  ] as const;
  const runs = 5;
  const assets = mkdtempSync(join(tmpdir(), 'awaken-studio-page-'));
  await build({ configFile: join(repo, 'inspector/vite.config.ts'), mode: 'production', build: { outDir: assets, emptyOutDir: true }, logLevel: 'error' });
  const record = mkdtempSync(join(tmpdir(), 'awaken-studio-runs-'));
  mkdirSync(record, { recursive: true });
  const sizes = new Map<number, number>();
  for (const c of cases) {
    const text = syntheticTranscript(c.steps, `studio-${c.steps}`, `run-${c.steps}`);
    sizes.set(c.steps, text.length);
    writeFileSync(join(record, `studio-${c.steps}.jsonl`), text);
  }
  const server = await startDemoAndSlow(['--record', record], { AWAKEN_INSPECTOR_ASSETS: assets });
  const browser = await launchChromium();
  const rows: { steps: number; bytes: number; times: number[]; median: number; fetch: number; page: number; target: number; nodes: number }[] = [];
  try {
    for (const c of cases) {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
      const problems: string[] = [];
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(`${server.url}/inspector/`);
      await page.getByRole('button', { name: `studio-${c.steps} (1 recorded)` }).click();
      const button = page.getByRole('button', { name: new RegExp(`^run-${c.steps} · .*recorded$`) });
      await button.waitFor();
      const times: number[] = [];
      const fetches: number[] = [];
      // One run first, not counted: the page's code warmed up as a user's would be after their first run.
      for (let i = 0; i <= runs; i++) {
        await page.evaluate(`document.getElementById('run')?.replaceChildren()`);
        // A string, not a function: the page gets it as written (no helpers a TypeScript loader adds).
        const ms = (await page.evaluate(`(async (runId) => {
          const target = [...document.querySelectorAll('#runs button')].find((b) => b.dataset.run === runId);
          if (target === undefined) throw new Error('no button for ' + runId);
          const t0 = performance.now();
          target.click();
          const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
          while (document.querySelector('#run .timeline[data-run-id="' + runId + '"] [data-termination]') === null) await frame();
          // The frame that shows it: layout and paint done.
          await frame();
          await new Promise((r) => setTimeout(r, 0));
          const total = performance.now() - t0;
          // Of which the transcript's download (the server reading and sending it): the rest is the page's.
          const got = performance.getEntriesByType('resource').filter((e) => e.name.includes('/v1/inspector/transcripts/') && e.startTime >= t0);
          performance.clearResourceTimings();
          return [total, got.reduce((n, e) => n + e.duration, 0)];
        })(${JSON.stringify(`run-${c.steps}`)})`)) as [number, number];
        if (i > 0) {
          times.push(ms[0]);
          fetches.push(ms[1]);
        }
      }
      const nodes = (await page.evaluate(`document.querySelectorAll('#run *').length`)) as number;
      if (problems.length > 0) throw new Error(`page errors: ${problems.join('; ')}`);
      rows.push({
        steps: c.steps,
        bytes: sizes.get(c.steps) ?? 0,
        times,
        median: median(times),
        fetch: median(fetches),
        page: median(times.map((t, k) => t - (fetches[k] ?? 0))),
        target: c.targetMs,
        nodes,
      });
      await page.close();
    }
  } finally {
    await browser.close();
    await server.stop();
  }
  const lines = [
    '| steps | transcript | runs (ms) | median | target | | median download | median page work | DOM nodes in the run view |',
    '|---:|---:|---|---:|---:|---|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.steps} | ${(r.bytes / 1e6).toFixed(1)} MB | ${r.times.map((t) => t.toFixed(0)).join(', ')} | ${r.median.toFixed(0)} ms | ${r.target} ms | ${r.median <= r.target ? 'ok' : 'OVER'} | ${r.fetch.toFixed(0)} ms | ${r.page.toFixed(0)} ms | ${r.nodes} |`,
    ),
  ];
  process.stdout.write(
    `inspector: a run's timeline, from a click on the run to the timeline on screen (headless Chromium, median of ${runs})\n\n${lines.join('\n')}\n`,
  );
  if (rows.some((r) => r.median > r.target)) process.exitCode = 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
