// The dashboard's build: `npm run build` writes dist/dashboard, which every node serves on its
// HTTP port (src/server/http/dashboard-assets.ts). Everything is bundled: nothing is fetched at
// run time.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: './',
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../dist/dashboard', import.meta.url)),
    emptyOutDir: true,
    // No inline scripts or styles (the node's Content-Security-Policy allows only files of its own).
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: 'es2022',
  },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
});
