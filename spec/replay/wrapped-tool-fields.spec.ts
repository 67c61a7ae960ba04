import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { A2UI_SURFACE_ACTIVITY } from '../../src/contract/a2ui.ts';
import { AgentSpecSchema } from '../../src/contract/agent-spec.ts';
import { a2uiPlugin } from '../../src/plugins/generative-ui.ts';
import { recordingTool, TranscriptLog } from '../../src/replay/recorder.ts';
import { ServedRecorder } from '../../src/replay/served.ts';
import type { Tool } from '../../src/runtime/tool.ts';

/**
 * A tool wrapped to be recorded (`awaken record`, `awaken serve --record`) is still the tool its
 * agent is offered: the version its `forAgent` picks for the agent (A2UI v0.8 or v0.9) and the
 * activities it says it reports (what CopilotKit's `/info` lists an agent by).
 */

/** The plugin's `render_a2ui` as it registers it (before any agent is known). */
function renderTool(): Tool {
  const tools: Tool[] = [];
  const registrar = new Proxy({} as Parameters<ReturnType<typeof a2uiPlugin>['register']>[0], {
    get: (_, name) => (name === 'registerTool' ? (t: Tool) => void tools.push(t) : () => undefined),
  });
  a2uiPlugin().register(registrar);
  return tools[0] as Tool;
}

const v08Agent = AgentSpecSchema.parse({
  id: 'old',
  model: 'm',
  system_prompt: '',
  plugin_ids: ['generative-ui'],
  sections: { 'generative-ui': { version: 'v0.8' } },
});
const v09Agent = AgentSpecSchema.parse({ id: 'new', model: 'm', system_prompt: '', plugin_ids: ['generative-ui'] });

describe('a recorded tool keeps what its agent is offered', () => {
  const wrappers: [string, (t: Tool) => Tool][] = [
    ['awaken record', (t) => recordingTool(t, new TranscriptLog())],
    ['awaken serve --record', (t) => new ServedRecorder({ dir: mkdtempSync(join(tmpdir(), 'awaken-wrapped-')), models: {}, tools: [] }).tool(t)],
  ];
  it.each(wrappers)('%s: the version forAgent picks, and the activity types', (_, wrap) => {
    const wrapped = wrap(renderTool());
    expect(wrapped.activityTypes).toEqual([A2UI_SURFACE_ACTIVITY]);
    expect(wrapped.forAgent?.(v08Agent).descriptor.description).toContain('A2UI v0.8');
    expect(wrapped.forAgent?.(v08Agent).activityTypes).toEqual(['a2ui']);
    expect(wrapped.forAgent?.(v09Agent).descriptor.description).toContain('A2UI v0.9');
    expect(wrapped.forAgent?.(v09Agent).activityTypes).toEqual([A2UI_SURFACE_ACTIVITY]);
  });
});
