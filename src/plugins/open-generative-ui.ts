import type { RuntimePlugin } from '../runtime/resolve.ts';

/**
 * Open Generative UI (seed 001 §9.12), an optional plugin an agent names in `plugin_ids`. The tool
 * (`generateSandboxedUi`) is the client's — CopilotKit's page declares it and runs it — and the run
 * treats its calls as any client's calls; what the plugin turns on is how they stream to AG-UI
 * clients (`src/protocols/ag-ui/open-generative-ui.ts`: an activity snapshot and deltas the page
 * renders in a sandboxed iframe as they come) and CopilotKit's `/info` saying
 * `openGenerativeUIEnabled`, which makes the page declare the tool. So it registers nothing in the
 * run itself, and a run with it replays as one without it.
 */
export const OPEN_GENERATIVE_UI_PLUGIN_ID = 'open-generative-ui';

export const openGenerativeUiPlugin: RuntimePlugin = {
  name: OPEN_GENERATIVE_UI_PLUGIN_ID,
  register: () => undefined,
};
