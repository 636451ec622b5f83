import { defineConfig } from 'vite';

/**
 * The dashboard, built by `npm install` (`prepare`: `vite build web`) into web/dist/, which the
 * daemon serves at `/` (src/http/serve-dashboard.ts). JSX uses Preact's automatic runtime.
 */
export default defineConfig({
  base: '/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
  },
  server: { proxy: { '/api': 'http://127.0.0.1:4200' } },
});
