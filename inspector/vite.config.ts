import { resolve } from 'node:path';
import { defaultClientConditions, defineConfig } from 'vite';

// The run inspector's page (docs/inspector.md), built with the package (`npm run build`) into
// dist/inspector-page, which `awaken serve` serves at /inspector/. Plain TypeScript and the DOM:
// no framework (ADR 0033), nothing loaded from elsewhere.
export default defineConfig(({ mode }) => ({
  root: import.meta.dirname,
  // A production build takes its packages' production builds whatever NODE_ENV says (a test runner
  // sets it to `test`): Lit's development build, say, warns on the console that it is one.
  resolve: {
    conditions: defaultClientConditions.map((c) => (c === 'development|production' ? (mode === 'production' ? 'production' : 'development') : c)),
  },
  base: './',
  logLevel: 'warn',
  build: {
    outDir: resolve(import.meta.dirname, '../dist/inspector-page'),
    emptyOutDir: true,
    // Everything in files of its own: the page's content security policy allows no inline script or style.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
}));
