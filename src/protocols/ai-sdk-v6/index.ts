export * from './encoder.ts';
