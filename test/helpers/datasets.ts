/** Test helpers for the real data in ../shared/datasets (BEIR layout), which tests read in place and skip without. */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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
