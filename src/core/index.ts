export * from './phase/index.ts';
export * from './state/index.ts';
export * from './inference/accumulator.ts';
export * from './policies/stop-policy.ts';
export { runMealy } from './mealy.ts';
export * from './context/index.ts';
export * from './deferral/index.ts';
export * from './pattern/index.ts';
