import { defineConfig } from 'vitest/config';

import { fileURLToPath } from 'node:url';

export default defineConfig({
  // Examples import the package by name, as users do; under vitest that name is the sources.
  resolve: { alias: { 'retrieval-sweep': fileURLToPath(new URL('./src/index.ts', import.meta.url)) } },
  test: {
    include: ['test/**/*.test.ts'],
    // Keeps every test's default cache folder inside the repository (test/helpers/setup-env.ts).
    setupFiles: ['test/helpers/setup-env.ts'],
    testTimeout: 120_000,
    hookTimeout: 300_000,
    pool: 'forks',
  },
});
