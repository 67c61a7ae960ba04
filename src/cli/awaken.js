#!/usr/bin/env node
// The `awaken` command: TypeScript sources run through tsx's loader (Node 20 cannot strip types).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./main.ts');
process.exitCode = await main(process.argv.slice(2));
