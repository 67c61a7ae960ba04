import react from '@vitejs/plugin-react';
import { resolve } from 'node:path';
import { defineConfig } from 'vite';

// Two pages that talk to awaken serve from another origin (spec/browser/): the AI SDK's useChat and
// the AG-UI client. `npx vite build browser` builds them into browser/dist.
export default defineConfig({
  root: import.meta.dirname,
  base: './',
  plugins: [react()],
  logLevel: 'warn',
  build: {
    outDir: resolve(import.meta.dirname, 'dist'),
    emptyOutDir: true,
    rollupOptions: {
      input: {
        chat: resolve(import.meta.dirname, 'chat.html'),
        agui: resolve(import.meta.dirname, 'agui.html'),
        a2ui: resolve(import.meta.dirname, 'a2ui.html'),
        'client-tool': resolve(import.meta.dirname, 'client-tool.html'),
      },
    },
  },
});
