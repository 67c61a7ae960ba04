import { loopSuites } from './loop-suites.ts';
const suite = loopSuites()[2]!;
const fn = suite.cases[0]!.fn;
for (let i = 0; i < 300; i++) await fn();
const t = process.hrtime.bigint();
for (let i = 0; i < 300; i++) await fn();
console.log(Number(process.hrtime.bigint() - t) / 300 / 50 / 1000, 'µs/step');
