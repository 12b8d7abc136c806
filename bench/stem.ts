/**
 * `npx tsx bench/stem.ts [--datasets DIR] [--rounds N]`: Porter2 stems per second, ours (src/retrieve/porter2.ts)
 * against wink-porter2-stemmer 2.0.1, on the a–z tokens of the shared corpora, in one process.
 *
 * Inputs: every maximal run of a–z in the lower-cased corpus.jsonl and queries.jsonl of each dataset under DIR
 * (default ../shared/datasets), in file order, repeats kept ("tokens"), and the distinct ones ("distinct"). Words
 * of fewer than 3 letters are included (both stemmers return them at once).
 *
 * Variants, each a pass over the same list, interleaved round by round (ours, wink, memo, ...), median of N rounds
 * (default 5) after one untimed warm-up round:
 *   ours     porter2(word) for every word (no memo)
 *   wink     wink-porter2-stemmer for every word (no memo)
 *   memo     ours through a Map memo (word → stem, filled during the pass, cleared before it): what tokenize.ts's
 *            stemTerm did around wink
 * Every pass checks that ours and wink give the same stems (exits 1 otherwise).
 * Output: one JSON line per (list, variant) on stdout: ns per word, stems per second; a table on stderr.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { porter2 } from '../src/retrieve/porter2.js';

const require = createRequire(import.meta.url);
const wink = require('wink-porter2-stemmer') as (word: string) => string;

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(name);
  return at >= 0 && at + 1 < process.argv.length ? process.argv[at + 1] : fallback;
}

const datasets = path.resolve(option('--datasets', path.resolve(repoRoot, '../shared/datasets')));
const rounds = Number(option('--rounds', '5'));
if (!Number.isInteger(rounds) || rounds < 1 || rounds > 100) {
  throw new Error(`--rounds: ${option('--rounds', '')} is not an integer from 1 to 100`);
}
if (!existsSync(datasets)) throw new Error(`--datasets: ${datasets} does not exist (give the folder of scifact/ ...)`);

const tokens: string[] = [];
for (const name of readdirSync(datasets).sort()) {
  for (const file of ['corpus.jsonl', 'queries.jsonl']) {
    const full = path.join(datasets, name, file);
    if (!existsSync(full)) continue;
    for (const m of readFileSync(full, 'utf8').toLowerCase().matchAll(/[a-z]+/g)) tokens.push(m[0]);
  }
}
const distinct = [...new Set(tokens)];

let sink = 0;
const variants: Record<string, (words: readonly string[]) => void> = {
  ours: (words) => {
    for (const w of words) sink += porter2(w).length;
  },
  wink: (words) => {
    for (const w of words) sink += wink(w).length;
  },
  memo: (words) => {
    const memo = new Map<string, string>();
    for (const w of words) {
      let stem = memo.get(w);
      if (stem === undefined) memo.set(w, (stem = porter2(w)));
      sink += stem.length;
    }
  },
};

for (const w of distinct) {
  if (porter2(w) !== wink(w)) {
    console.error(`stems differ on "${w}": ours ${porter2(w)}, wink ${wink(w)}`);
    process.exit(1);
  }
}

const median = (xs: number[]): number => {
  const s = xs.slice().sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const lists: Record<string, readonly string[]> = { tokens, distinct };
for (const [listName, words] of Object.entries(lists)) {
  const times: Record<string, number[]> = { ours: [], wink: [], memo: [] };
  for (let round = 0; round <= rounds; round++) {
    for (const [name, run] of Object.entries(variants)) {
      const t0 = process.hrtime.bigint();
      run(words);
      const ns = Number(process.hrtime.bigint() - t0);
      if (round > 0) times[name].push(ns);
    }
  }
  for (const [name, ns] of Object.entries(times)) {
    const perWord = median(ns) / words.length;
    const line = { list: listName, words: words.length, variant: name, ns_per_word: +perWord.toFixed(1), stems_per_second: Math.round(1e9 / perWord), rounds };
    console.log(JSON.stringify(line));
    console.error(`${listName.padEnd(9)} ${String(words.length).padStart(9)} ${name.padEnd(5)} ${perWord.toFixed(1).padStart(7)} ns/word  ${(1e9 / perWord / 1e6).toFixed(2)} M stems/s`);
  }
}
if (sink === 0) console.error('(no output)');
