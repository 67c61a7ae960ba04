#!/usr/bin/env node
// The `awaken` command from the TypeScript sources, through tsx's loader (Node 20 cannot strip
// types); the package's bin is the compiled dist/cli/bin.js.
import { register } from 'tsx/esm/api';

register();
const { cli } = await import('./main.ts');
await cli(process.argv.slice(2));
