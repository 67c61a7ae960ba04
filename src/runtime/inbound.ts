export type { InboundRun } from '../contract/inbound.ts';
