export * from './encoder.ts';
export * from './judge.ts';
