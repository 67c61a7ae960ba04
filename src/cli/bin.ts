#!/usr/bin/env node
// The `awaken` command of the package (compiled to dist/cli/bin.js); in a checkout,
// src/cli/awaken.js runs the same `cli` from the TypeScript sources.
import { cli } from './main.ts';

await cli(process.argv.slice(2));
