import { Messages, type Message } from '../src/contract/message.ts';
import type { ToolDescriptor } from '../src/contract/tool.ts';
import { byteHeuristicTokenizer, truncateMessages } from '../src/core/context/index.ts';
import {
  DeferredToolsConfigSchema,
  newDiscBetaEntry,
  observeTurn,
  parseToolQuery,
  searchTools,
  toolsToDefer,
  type DiscBetaEntry,
} from '../src/core/deferral/index.ts';
import type { Suite } from './harness.ts';

/** A conversation of `n` messages: user / assistant turns, every fifth turn a tool call with its result. */
function conversation(n: number): Message[] {
  const out: Message[] = [];
  for (let i = 0; out.length < n; i++) {
    if (i % 5 === 4 && out.length + 2 <= n) {
      out.push(Messages.assistantWithToolCalls('', [{ id: `c${i}`, name: 'lookup', arguments: { q: `item ${i}` } }], { id: `a${i}` }));
      out.push(Messages.tool(`c${i}`, `result ${i} `.repeat(20), { id: `t${i}` }));
    } else out.push(i % 2 === 0 ? Messages.user(`question ${i} `.repeat(10), { id: `u${i}` }) : Messages.assistant(`answer ${i} `.repeat(10), { id: `m${i}` }));
  }
  return out;
}

/** Truncation of `n` messages to half their tokens; baseline: a bare drop-oldest loop (no pairs, no systems). */
function truncationSuite(n: number): Suite {
  const messages = conversation(n);
  let total = 0;
  for (const m of messages) total += byteHeuristicTokenizer.messageTokens(m);
  const budget = Math.floor(total / 2);
  return {
    name: `truncate-${n >= 1000 ? `${n / 1000}k` : n}`,
    description: `truncateMessages of ${n} messages to half their tokens (min_recent 10), against a drop-oldest loop`,
    units: { name: 'msg', count: n },
    cases: [
      { name: 'awaken truncateMessages', role: 'subject', fn: () => truncateMessages(messages, { budget, minRecent: 10 }) },
      {
        name: 'baseline drop-oldest',
        role: 'baseline',
        fn: () => {
          const tokens = messages.map((m) => byteHeuristicTokenizer.messageTokens(m));
          let sum = 0;
          for (const t of tokens) sum += t;
          let start = 0;
          while (sum > budget && start < messages.length - 10) sum -= tokens[start++] as number;
          return messages.slice(start);
        },
      },
    ],
  };
}

/** One DiscBeta turn for 1,000 tools: decay and observe every posterior, then the re-deferral decision. */
function discBetaSuite(): Suite {
  const ids = Array.from({ length: 1000 }, (_, i) => `tool_${i}`);
  const config = DeferredToolsConfigSchema.parse({ disc_beta: { defer_after: 2 } });
  let entries: Record<string, DiscBetaEntry> = Object.fromEntries(ids.map((id, i) => [id, { ...newDiscBetaEntry(0.05, 5, 400 + i, 3), last_used_turn: 0 }]));
  const modes = Object.fromEntries(ids.map((id, i) => [id, i % 2 === 0 ? ('eager' as const) : ('deferred' as const)]));
  const used = new Set(ids.filter((_, i) => i % 7 === 0));
  let turn = 1;
  const alpha = new Float64Array(1000).fill(0.25);
  const beta = new Float64Array(1000).fill(4.75);
  return {
    name: 'disc-beta-1000-tools',
    description: 'one turn of DiscBeta over 1,000 tools (observe + toolsToDefer with the exact Beta bound), against decaying two arrays',
    units: { name: 'tool', count: 1000 },
    cases: [
      {
        name: 'awaken observe+toolsToDefer',
        role: 'subject',
        fn: () => {
          entries = observeTurn(entries, 0.95, turn, used);
          turn++;
          return toolsToDefer(entries, modes, config, turn);
        },
      },
      {
        name: 'baseline arrays',
        role: 'baseline',
        fn: () => {
          for (let i = 0; i < 1000; i++) {
            const hit = i % 7 === 0;
            alpha[i] = (alpha[i] as number) * 0.95 + (hit ? 1 : 0);
            beta[i] = (beta[i] as number) * 0.95 + (hit ? 0 : 1);
          }
          return alpha;
        },
      },
    ],
  };
}

/** ToolSearch over 1,000 descriptors; baseline: one lowercase `includes` per descriptor. */
function toolSearchSuite(): Suite {
  const words = ['weather', 'news', 'calendar', 'mail', 'files', 'search', 'maps', 'music', 'notes', 'tasks'];
  const registry: ToolDescriptor[] = Array.from({ length: 1000 }, (_, i) => ({
    id: `${words[i % 10]}_${i}`,
    name: `${words[i % 10]}_${i}`,
    description: `Tool ${i}: works with ${words[(i * 3) % 10]} and ${words[(i * 7) % 10]} for a city`,
    parameters: { type: 'object' },
  }));
  const query = parseToolQuery('weather forecast city');
  return {
    name: 'tool-search-1000',
    description: 'ToolSearch keyword ranking over 1,000 descriptors (top 5), against a single-keyword filter',
    units: { name: 'tool', count: 1000 },
    cases: [
      { name: 'awaken searchTools', role: 'subject', fn: () => searchTools(registry, query, 5) },
      {
        name: 'baseline includes',
        role: 'baseline',
        fn: () => registry.filter((t) => `${t.id} ${t.name} ${t.description}`.toLowerCase().includes('weather')).slice(0, 5),
      },
    ],
  };
}

export const contextSuites = (): Suite[] => [truncationSuite(1000), truncationSuite(10_000), truncationSuite(100_000), discBetaSuite(), toolSearchSuite()];
