#!/usr/bin/env node
// The `retrieval-sweep` command: runs the compiled JavaScript in dist/ (built by `npm run build`, which `prepare`
// runs on `npm install` in a clone and on `npm pack`). No TypeScript loader at run time.
import { existsSync } from 'node:fs';

const entry = new URL('../dist/cli/bin.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('retrieval-sweep: dist/ is missing; run `npm run build` in the package folder (npm install does it in a clone)\n');
  process.exit(1);
}
await import(entry.href);
