import type { RuntimePlugin } from '../runtime/resolve.ts';
import { deferredToolsPlugin } from './deferred-tools.ts';
import { a2uiPlugin } from './generative-ui.ts';
import { handoffPlugin } from './handoff.ts';
import { observabilityPlugin } from './observability/plugin.ts';
import { openGenerativeUiPlugin } from './open-generative-ui.ts';
import { configuredSkills } from './skills/plugin.ts';
import { permissionPlugin } from './permission.ts';
import { reminderPlugin } from './reminder.ts';
import { stateMachinePlugin } from './state-machine/plugin.ts';
import { finishOnPlugin, toolGatePlugin } from './tool-gate.ts';

const deferredTools = deferredToolsPlugin();
const reminder = reminderPlugin();
const stateMachine = stateMachinePlugin();
// With `transfer_to_agent`: from a config, the model's own call is how a handoff is asked for.
const handoff = handoffPlugin({}, { tool: true });
const generativeUi = a2uiPlugin();
const skills = configuredSkills();
// Spans to no sink: a recorded run with the plugin replays (its draws are the same); a server or a
// replay that wants the spans gives an instance with its own sink (`awaken serve --otel`).
const observability = observabilityPlugin({ onInference: () => undefined, onTool: () => undefined, onRunEnd: () => undefined });

/**
 * The plugins a transcript or an `awaken serve` config may name, by id (plugins that need no port
 * beyond the run's own).
 */
export const PLUGIN_CATALOG: ReadonlyMap<string, RuntimePlugin> = new Map([
  [toolGatePlugin.name, toolGatePlugin],
  [finishOnPlugin.name, finishOnPlugin],
  [deferredTools.name, deferredTools],
  [permissionPlugin.name, permissionPlugin],
  [reminder.name, reminder],
  [stateMachine.name, stateMachine],
  [handoff.name, handoff],
  [generativeUi.name, generativeUi],
  [openGenerativeUiPlugin.name, openGenerativeUiPlugin],
  [skills.discovery.name, skills.discovery],
  [skills.activeInstructions.name, skills.activeInstructions],
  [observability.name, observability],
]);
