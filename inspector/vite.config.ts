import { resolve } from 'node:path';
import { defineConfig } from 'vite';

// The run inspector's page (docs/inspector.md), built with the package (`npm run build`) into
// dist/inspector-page, which `awaken serve` serves at /inspector/. Plain TypeScript and the DOM:
// no framework (ADR 0033), nothing loaded from elsewhere.
export default defineConfig({
  root: import.meta.dirname,
  base: './',
  logLevel: 'warn',
  build: {
    outDir: resolve(import.meta.dirname, '../dist/inspector-page'),
    emptyOutDir: true,
    // Everything in files of its own: the page's content security policy allows no inline script or style.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
});
