/** Test helpers for the real data in ../shared/datasets (BEIR layout), which tests read in place and skip without. */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadBeir } from '../../src/load/beir.js';
import type { Chunk } from '../../src/types.js';

/** Absolute path of ../shared/datasets beside the repository. */
export const sharedDatasets = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared/datasets');

/**
 * Every document of the named BEIR datasets under {@link sharedDatasets} as `title + "\n\n" + text` (what the BEIR
 * loader indexes), in file order; a dataset whose corpus.jsonl is absent is left out.
 */
export function sharedDocumentTexts(names: readonly string[]): string[] {
  const out: string[] = [];
  for (const name of names) {
    const file = path.join(sharedDatasets, name, 'corpus.jsonl');
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line.trim() === '') continue;
      const d = JSON.parse(line) as { title?: string; text: string };
      out.push(`${d.title ?? ''}\n\n${d.text}`);
    }
  }
  return out;
}

/**
 * A BEIR folder's documents as whole-document chunks (id `<doc id>#0`, the loader's text) and the text of every query
 * in queries.jsonl, in file order: the inputs of the BM25 differential tests.
 */
export async function beirChunksAndQueries(root: string): Promise<{ chunks: Chunk[]; queries: string[] }> {
  const { docs } = await loadBeir(root, 'test');
  const chunks = docs.map((d) => ({ id: `${d.id}#0`, docId: d.id, ordinal: 0, text: d.text, start: 0, end: d.text.length, tokens: 0 }));
  const queries = readFileSync(path.join(root, 'queries.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => (JSON.parse(l) as { text: string }).text);
  return { chunks, queries };
}
