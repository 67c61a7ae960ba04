export * from './mutation-batch.ts';
export * from './snapshot.ts';
export * from './state-command.ts';
export * from './state-key.ts';
export * from './state-ops.ts';
