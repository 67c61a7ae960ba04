export * from './phase-error.ts';
export * from './plugin.ts';
export * from './report.ts';
export * from './runtime-keys.ts';
