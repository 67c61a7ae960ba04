export * from './config.ts';
export * from './engine.ts';
export * from './plugin.ts';
