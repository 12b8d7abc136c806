/**
 * The report's sentence on where the labels came from (issue 21): the manifest's `labels` (src/label/sources.ts), read
 * back as plain data, so an older manifest without it, or a damaged one, gives no sentence. Pure.
 */
import type { SweepResult } from '../types.js';
import { manifestValue } from './metrics.js';

const num = (x: unknown): number | null => (typeof x === 'number' && Number.isFinite(x) ? x : null);

/**
 * One sentence: the document labels loaded, how many a person and a model graded in the judgments log, the log's
 * judgments not used, and per judge model its runs, requests, tokens, seconds waited and cost (when priced); null
 * when the manifest has no `labels`, or no judgments log and no judge run.
 */
export function labelSourcesSentence(result: SweepResult): string | null {
  const s = manifestValue(result, ['labels']) as Record<string, unknown> | undefined;
  if (!s || typeof s !== 'object') return null;
  const loaded = num(s.loaded);
  const human = num(s.human);
  const llm = num(s.llm);
  const notMerged = num(s.notMerged) ?? 0;
  const judge = Array.isArray(s.judge) ? (s.judge as Record<string, unknown>[]) : [];
  if (loaded === null || human === null || llm === null || (s.log === null && judge.length === 0)) return null;
  let text =
    `Labels: ${loaded} document label(s) loaded: ${loaded - human - llm} from the dataset as written, ${human} graded by a person and ${llm} by a model ` +
    `in the judgments log${notMerged > 0 ? ` (${notMerged} judgment(s) in the log are not in the labels file and were not used)` : ''}.`;
  for (const u of judge) {
    if (typeof u.model !== 'string') continue;
    const cost = num(u.cost);
    text +=
      ` Judge ${u.model}: ${num(u.runs) ?? 0} run(s), ${num(u.requests) ?? 0} request(s) (${num(u.retries) ?? 0} retried), ` +
      `${num(u.tokensIn) ?? 0} tokens in, ${num(u.tokensOut) ?? 0} out, ${(num(u.waitSeconds) ?? 0).toFixed(1)} s waited` +
      `${cost === null ? '' : `, cost ${cost.toFixed(4)}`}.`;
  }
  return text;
}
