export * from './contract/index.ts';
export * from './core/index.ts';
export * from './runtime/index.ts';
export * from './plugins/deferred-tools.ts';
export * from './plugins/permission.ts';
export * from './plugins/reminder.ts';
export * from './plugins/state-machine/index.ts';
export * from './plugins/skills/index.ts';
