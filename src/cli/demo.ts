import { z } from 'zod';
import { ToolResults } from '../contract/tool.ts';
import type { AgentSpecInput } from '../contract/agent-spec.ts';
import { defineTool, type Tool } from '../runtime/tool.ts';

/** `echo`: returns `{"echoed": text}`. */
export const echo = defineTool({
  id: 'echo',
  description: 'Echo the text back to the caller',
  args: z.object({ text: z.string() }),
  execute: ({ text }) => ToolResults.success('echo', { echoed: text }),
});

const CONDITIONS = ['sunny', 'cloudy', 'rainy', 'windy', 'snowy'] as const;

/** `get_weather`: a deterministic fake forecast derived from the city name. */
export const getWeather = defineTool({
  id: 'get_weather',
  description: 'Fetch the current weather for a city (a deterministic fake forecast)',
  args: z.object({ city: z.string().min(1) }),
  execute: ({ city }) => {
    let h = 0;
    for (const ch of city.toLowerCase()) h = (h * 31 + (ch.codePointAt(0) ?? 0)) >>> 0;
    return ToolResults.success('get_weather', { city, condition: CONDITIONS[h % CONDITIONS.length] as string, temperature_c: (h % 35) - 5 });
  },
});

/** `fail`: always returns `ToolResult.error`. */
export const fail = defineTool({
  id: 'fail',
  description: 'Always fails (returns a tool error result)',
  args: z.object({ reason: z.string().optional() }),
  execute: ({ reason }) => ToolResults.error('fail', reason ?? 'this tool always fails'),
});

/** `confirm_action`: suspends until a decision arrives; resumed, it reports what was confirmed. */
export const confirmAction = defineTool({
  id: 'confirm_action',
  description: 'Ask the user to confirm an action before it happens',
  args: z.object({ action: z.string().min(1) }),
  execute: ({ action }, ctx) => {
    if (ctx.resume !== undefined) return ToolResults.success('confirm_action', { confirmed: action, decision: ctx.resume.decision.result ?? null });
    return ToolResults.suspended('confirm_action', `Waiting for confirmation of: ${action}`, {
      suspension: { id: `confirm-${ctx.callId}`, action: 'confirm', message: `Confirm: ${action}?` },
      pending: { id: ctx.callId, name: 'confirm_action', arguments: { action } },
      resume_mode: 'replay_tool_call',
    });
  },
});

export const DEMO_TOOLS: readonly Tool[] = [echo, getWeather, fail, confirmAction];

/**
 * `Read` and `Write` over in-memory workspaces (maps of paths to text, never the disk): tools for
 * agents that follow a file protocol, such as the read-before-write state machine of
 * docs/plugins/state-machine.md. `awaken serve` offers them to configured agents; the demo agent
 * keeps to the demo tools.
 *
 * A workspace belongs to a thread's owner (`ownerOf`: the principal the store records for the
 * run's thread, docs/adr/0035-workspace-per-thread-owner.md): a principal's runs share theirs, across
 * its threads and its delegates' threads, and never reach another's. Threads without an owner (an
 * open server, the operator's own) share one. The owner is read from the store, never derived from
 * the thread's name, so a thread id deleted and taken by someone else does not bring the files along.
 */
export function workspaceTools(ownerOf: (threadId: string) => Promise<string | undefined> = () => Promise.resolve(undefined)): readonly Tool[] {
  const workspaces = new Map<string | undefined, Map<string, string>>();
  const filesOf = async (threadId: string): Promise<Map<string, string>> => {
    const owner = await ownerOf(threadId);
    let files = workspaces.get(owner);
    if (files === undefined) {
      files = new Map();
      workspaces.set(owner, files);
    }
    return files;
  };
  const read = defineTool({
    id: 'Read',
    description: 'Read a file of the workspace (an absent file reads as empty, with exists: false)',
    args: z.object({ file_path: z.string().min(1) }),
    execute: async ({ file_path }, ctx) => {
      const files = await filesOf(ctx.threadId);
      return ToolResults.success('Read', { file_path, exists: files.has(file_path), content: files.get(file_path) ?? '' });
    },
  });
  const write = defineTool({
    id: 'Write',
    description: 'Write a file of the workspace (replacing it)',
    args: z.object({ file_path: z.string().min(1), content: z.string() }),
    execute: async ({ file_path, content }, ctx) => {
      (await filesOf(ctx.threadId)).set(file_path, content);
      return ToolResults.success('Write', { file_path, bytes: Buffer.byteLength(content) });
    },
  });
  return [read, write];
}

/** The built-in `demo` agent. */
export const demoAgent = (model: string): AgentSpecInput => ({
  id: 'demo',
  model,
  system_prompt: 'You are the awaken demo agent. Use the tools when they help.',
  max_rounds: 16,
  allowed_tools: DEMO_TOOLS.map((t) => t.descriptor.id),
});
