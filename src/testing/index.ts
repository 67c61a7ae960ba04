export * as arbitraries from './arbitraries.ts';
