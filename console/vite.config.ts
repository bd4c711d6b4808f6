import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/** The console is served by the service at /console/ from dist/console (see src/http/console.ts). */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  // The SDK from its source, as the console's type-check sees it: no build of packages/ needed first.
  resolve: { alias: { '@filestore/client': fileURLToPath(new URL('../packages/client/src/index.ts', import.meta.url)) } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    // The service's CSP allows no inline script: every module is a file of its own.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
  },
});
