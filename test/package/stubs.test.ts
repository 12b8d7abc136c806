/**
 * Issue 25 item 5: package.json's `overrides` install the empty packages of stubs/ in place of onnxruntime-web (a
 * dependency of transformers.js) and openai (an optional dependency of LanceDB), which this tool never loads. These
 * tests pin why that is safe: each stub throws when loaded, yet transformers.js and LanceDB load in this install, so
 * neither loads its stub. An upgrade that starts loading one fails here with the stub's message (then remove the
 * override; stubs/README.md).
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const require = createRequire(import.meta.url);
const stubs = ['onnxruntime-web', 'openai'] as const;

/** Whether `name` resolves to our stub in this install (false in a clone installed before the overrides). */
function stubbed(name: string): boolean {
  return require.resolve(name).startsWith(path.join(repoRoot, 'stubs') + path.sep);
}

describe('the stubs installed by overrides', () => {
  it.each(stubs)('%s resolves to stubs/ and throws, naming the override, when loaded', (name) => {
    expect(stubbed(name)).toBe(true);
    expect(() => require(name)).toThrow(/stub in this install .*overrides/);
  });

  it('transformers.js (its Node build, as src/embed/transformers.ts imports it) loads without onnxruntime-web', async () => {
    const t = await import('@huggingface/transformers');
    expect(typeof t.pipeline).toBe('function');
    expect(typeof t.AutoModel).toBe('function');
  });

  it('LanceDB (required as src/retrieve/lancedb.ts requires it) loads without openai', () => {
    const lance = require('@lancedb/lancedb') as { connect: unknown };
    expect(typeof lance.connect).toBe('function');
  });
});
