export * from './contract/index.ts';
export * from './core/index.ts';
