import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

// Built into web/dist and served by Parley itself (src/routes/web): the shell at /, /login and
// /accounts/login/, every asset under /static/app/ with a content hash in its name.
export default defineConfig({
  root,
  base: '/static/app/',
  resolve: {
    alias: { react: 'preact/compat', 'react-dom': 'preact/compat', 'react/jsx-runtime': 'preact/jsx-runtime' },
  },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    // Two pages, each loading exactly its own code: the app (/) and the login page (/login).
    rollupOptions: { input: { app: `${root}index.html`, login: `${root}login.html` } },
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // Measured and recorded by scripts/web-budget.mjs; a regression shows there, not as a warning.
    chunkSizeWarningLimit: 1000,
  },
});
