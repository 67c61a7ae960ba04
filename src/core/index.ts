export * from './phase/index.ts';
export * from './state/index.ts';
