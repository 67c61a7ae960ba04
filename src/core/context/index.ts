export * from './tokens.ts';
export * from './policy.ts';
export * from './truncation.ts';
export * from './compaction.ts';
export * from './recovery.ts';
