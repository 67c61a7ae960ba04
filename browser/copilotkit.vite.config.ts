import react from '@vitejs/plugin-react';
import { resolve } from 'node:path';
import { defineConfig } from 'vite';

// CopilotKit's React front end (spec/browser/copilotkit.spec.ts), built on its own: it is a large
// bundle the other pages do not need. Built for production (the spec sets NODE_ENV while it builds):
// no development inspector, no development-only warnings, Lit's production build.
export default defineConfig({
  root: import.meta.dirname,
  base: './',
  plugins: [react()],
  logLevel: 'warn',
  mode: 'production',
  build: {
    outDir: resolve(import.meta.dirname, 'dist-copilotkit'),
    emptyOutDir: true,
    chunkSizeWarningLimit: 10_000,
    rollupOptions: { input: { copilotkit: resolve(import.meta.dirname, 'copilotkit.html') } },
  },
});
