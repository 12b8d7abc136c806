/** Installed package versions for manifests, read from node_modules. */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);

/**
 * The `version` of an installed package, or `'not installed'`. Finds the package.json by resolving the package's
 * entry point and walking up to the folder whose package.json has that name (works for packages whose `exports`
 * hide `package.json`).
 */
export function packageVersion(name: string): string {
  let entry: string;
  try {
    entry = require.resolve(name);
  } catch {
    return 'not installed';
  }
  let dir = path.dirname(entry);
  for (;;) {
    const pj = path.join(dir, 'package.json');
    if (existsSync(pj)) {
      try {
        const parsed = JSON.parse(readFileSync(pj, 'utf8')) as { name?: string; version?: string };
        if (parsed.name === name && typeof parsed.version === 'string') return parsed.version;
      } catch {
        // keep walking up
      }
    }
    const up = path.dirname(dir);
    if (up === dir) return 'unknown';
    dir = up;
  }
}
