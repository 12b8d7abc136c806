/**
 * `npm run bench:startup [-- RUNS]`: start-up time of the command beside `node -e 0`, measured in the same run.
 * Runs each case RUNS times (default 10), interleaved, and prints the median, min and max wall time in ms and the
 * ratio of medians to `node -e 0`. Needs dist/ (`npm run build`). The last row is the tsx path the bin used before
 * it ran compiled JavaScript.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
if (!existsSync(path.join(repoRoot, 'dist/cli/bin.js'))) {
  process.stderr.write('bench:startup: dist/ is missing; run npm run build first\n');
  process.exit(1);
}
const runs = Number(process.argv[2] ?? 10);
if (!Number.isInteger(runs) || runs < 1) {
  process.stderr.write(`bench:startup: RUNS must be a whole number ≥ 1 (got ${process.argv[2]})\nusage: npm run bench:startup -- [RUNS]\n`);
  process.exit(2);
}
const node = process.execPath;
const cases: [string, string[]][] = [
  ['node -e 0', ['-e', '0']],
  ['retrieval-sweep --help', ['bin/retrieval-sweep.js', '--help']],
  ['retrieval-sweep --version', ['bin/retrieval-sweep.js', '--version']],
  ['tsx src/cli/bin.ts --help (the old bin)', ['--import', 'tsx', 'src/cli/bin.ts', '--help']],
];
const median = (a: number[]): number => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const times = new Map<string, number[]>(cases.map(([n]) => [n, []]));
for (let r = 0; r < runs; r++) {
  for (const [name, args] of cases) {
    const t = performance.now();
    execFileSync(node, args, { cwd: repoRoot, stdio: 'ignore' });
    times.get(name)!.push(performance.now() - t);
  }
}
const base = median(times.get('node -e 0')!);
for (const [name, v] of times) {
  process.stdout.write(
    `${name.padEnd(42)} median ${median(v).toFixed(0).padStart(5)} ms  min ${Math.min(...v).toFixed(0).padStart(5)}  max ${Math.max(...v).toFixed(0).padStart(5)}  ${(median(v) / base).toFixed(2)}× node -e 0\n`,
  );
}
