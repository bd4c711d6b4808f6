import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/** The console is served by the service at /console/ from dist/console (see src/http/console.ts). */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    // The service's CSP allows no inline script: every module is a file of its own.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
  },
});
