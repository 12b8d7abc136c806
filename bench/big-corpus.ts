/**
 * Loader scale check (issue 12, acceptance): a ~600 MB BEIR corpus.jsonl loads (streamed), and a corrupt line near
 * its end is still named by its line number.
 *
 * npm run bench:loaders [-- --mb 600] [--keep]
 *
 * Writes, in a fresh temp folder, corpus.jsonl made of SciFact's corpus repeated (copy 0 keeps the ids, copy k
 * renames `_id` to `<id>-r<k>`), SciFact's queries.jsonl and qrels/test.tsv; loads it with `loadBeir`; prints the
 * load's seconds and the process's peak RSS; then overwrites the first byte of the second-to-last line with `X`,
 * loads again and checks that the error is DOCUMENT_INVALID at exactly that line. As the baseline, it then shows
 * what the previous loader did, `readFile(corpus, 'utf8')` of the whole file (V8 refuses strings past ~512 MB).
 * The temp folder is deleted at the end (also on failure) unless `--keep`. Results go to stdout as JSON lines.
 * Needs /work/shared/datasets/scifact (../shared/datasets/scifact from the repo root).
 */
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, copyFileSync } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isHarnessError } from '../src/errors.js';
import { loadBeir } from '../src/load/beir.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const scifact = path.resolve(here, '../../shared/datasets/scifact');

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
}

async function writeCorpus(file: string, targetBytes: number): Promise<{ lines: number; bytes: number; secondLastOffset: number }> {
  const source = readFileSync(path.join(scifact, 'corpus.jsonl'), 'utf8').split('\n').filter((l) => l.trim() !== '');
  const out = createWriteStream(file);
  let bytes = 0;
  let lines = 0;
  let lastOffset = 0;
  let secondLastOffset = 0;
  const write = (s: string): Promise<void> | undefined => (out.write(s) ? undefined : new Promise((r) => out.once('drain', () => r())));
  for (let copy = 0; bytes < targetBytes; copy++) {
    for (const line of source) {
      const renamed = copy === 0 ? line : line.replace(/^\{"_id": "([^"]*)"/, (_m, id: string) => `{"_id": "${id}-r${copy}"`);
      if (renamed === line && copy !== 0) throw new Error(`unexpected corpus line shape: ${line.slice(0, 40)}`);
      secondLastOffset = lastOffset;
      lastOffset = bytes;
      const s = `${renamed}\n`;
      bytes += Buffer.byteLength(s);
      lines++;
      const p = write(s);
      if (p) await p;
    }
  }
  await new Promise<void>((resolve, reject) => out.end((e?: Error | null) => (e ? reject(e) : resolve())));
  return { lines, bytes, secondLastOffset };
}

async function main(): Promise<void> {
  if (!existsSync(path.join(scifact, 'corpus.jsonl'))) throw new Error(`SciFact not found at ${scifact}`);
  const mb = Number(arg('--mb') ?? 600);
  const keep = process.argv.includes('--keep');
  const root = mkdtempSync(path.join(tmpdir(), 'rs-big-corpus-'));
  try {
    mkdirSync(path.join(root, 'qrels'));
    copyFileSync(path.join(scifact, 'queries.jsonl'), path.join(root, 'queries.jsonl'));
    copyFileSync(path.join(scifact, 'qrels', 'test.tsv'), path.join(root, 'qrels', 'test.tsv'));
    const corpus = path.join(root, 'corpus.jsonl');
    let t = performance.now();
    const w = await writeCorpus(corpus, mb * 1024 * 1024);
    console.log(JSON.stringify({ step: 'write', file: corpus, bytes: statSync(corpus).size, lines: w.lines, seconds: +((performance.now() - t) / 1000).toFixed(1) }));

    const rssBefore = process.memoryUsage().rss;
    t = performance.now();
    const loaded = await loadBeir(root, 'test');
    const seconds = (performance.now() - t) / 1000;
    const peakRss = process.resourceUsage().maxRSS * 1024; // maxRSS is in kilobytes
    console.log(
      JSON.stringify({
        step: 'load (streamed)',
        docs: loaded.docs.length,
        questions: loaded.questions.length,
        seconds: +seconds.toFixed(1),
        rss_before_mb: Math.round(rssBefore / 2 ** 20),
        peak_rss_mb: Math.round(peakRss / 2 ** 20),
        mb_per_second: +(w.bytes / 2 ** 20 / seconds).toFixed(1),
      }),
    );
    if (loaded.docs.length !== w.lines) throw new Error(`expected ${w.lines} docs, got ${loaded.docs.length}`);
    loaded.docs.length = 0; // let the documents go before the second load

    // Corrupt the second-to-last line: its first byte `{` becomes `X`, so the line is no longer JSON.
    const fh = await open(corpus, 'r+');
    await fh.write(Buffer.from('X'), 0, 1, w.secondLastOffset);
    await fh.close();
    const badLine = w.lines - 1;
    t = performance.now();
    let named: number | undefined;
    let code: string | undefined;
    try {
      await loadBeir(root, 'test');
    } catch (e) {
      if (!isHarnessError(e)) throw e;
      named = e.location.line;
      code = e.code;
    }
    const ok = code === 'DOCUMENT_INVALID' && named === badLine;
    console.log(JSON.stringify({ step: 'corrupt line', corrupted_line: badLine, error_code: code ?? null, error_line: named ?? null, ok, seconds: +((performance.now() - t) / 1000).toFixed(1) }));

    // Baseline: the previous loader read the whole file into one string.
    let baseline: string;
    try {
      const text = await readFile(corpus, 'utf8');
      baseline = `read ${text.length} characters`;
    } catch (e) {
      baseline = `fails: ${(e as NodeJS.ErrnoException).code ?? ''} ${(e as Error).message}`;
    }
    console.log(JSON.stringify({ step: "baseline: readFile(corpus, 'utf8') as the previous loader did", result: baseline }));
    if (!ok) process.exitCode = 1;
  } finally {
    if (!keep) rmSync(root, { recursive: true, force: true });
    else console.log(JSON.stringify({ kept: root }));
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
