export * from './beta.ts';
export * from './config.ts';
export * from './disc-beta.ts';
export * from './state.ts';
export * from './tool-search.ts';
