// `awaken-ts/unstable`: the whole surface the root entry had before it was curated — the run loop,
// the tool batch, the phase runtime, snapshot internals, the loop's own state keys, the pure core's
// helpers, the schemas, ids and engines behind the built-in plugins — so code that reached for one of
// them keeps a way to it. The root entry's names are here too, as the same bindings; a name that is
// only here carries no semver promise: a minor release may change or remove it (docs/api.md,
// docs/adr/0045-curated-root.md). Whole modules, not a list: whatever they export is reachable from
// one entry or the other without anyone having to remember to add it.
export * from './contract/index.ts';
export * from './core/index.ts';
export * from './runtime/index.ts';
export * from './plugins/deferred-tools.ts';
export * from './plugins/permission.ts';
export * from './plugins/reminder.ts';
export * from './plugins/state-machine/index.ts';
export * from './plugins/skills/index.ts';
export * from './plugins/mcp-tools.ts';
export * from './plugins/handoff.ts';
export * from './plugins/generative-ui.ts';
export * from './plugins/observability/plugin.ts';
export * from './plugins/observability/spans.ts';
export * from './plugins/define-plugin.ts';
export type { RunTap, TapRun, TappedInference, TappedStep } from './runtime/tap.ts';
export {
  defineApp,
  pluginFactory,
  originOf,
  PluginConfigError,
  type AppDefinition,
  type AiSdkToolLike,
  type LanguageModelLike,
  type PluginFactory,
  type PluginOrigin,
} from './app/define.ts';
export { scriptedProvider } from './app/scripted-provider.ts';
