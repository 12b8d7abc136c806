/**
 * Reading query times honestly. `meanQueryMs` is one batch's wall time divided by its questions; a batch that took
 * only a few milliseconds in all is within the scheduler, JIT and garbage-collector noise of a shared machine (the
 * helpdesk demo's 40 questions gave 0.01 vs 0.56 ms per query, then 0.02 vs 0.08 on a re-run). Pure.
 */

import type { ConfigResult } from '../types.js';
import { fmtTime } from './format.js';

/**
 * The shortest batch whose wall time the report treats as measured, in milliseconds: 100 ms. Below it a row's
 * ms/query is shown as "< r" with r = 100 ms / questions (its resolution) and never used in a sentence.
 */
export const MIN_TIMED_BATCH_MS = 100;

/** A row's ms/query resolution: {@link MIN_TIMED_BATCH_MS} / questions (the whole batch when it has no questions). */
export function queryMsResolution(row: Pick<ConfigResult, 'questions'>): number {
  return MIN_TIMED_BATCH_MS / Math.max(1, row.questions);
}

/** True when the row's batch took at least {@link MIN_TIMED_BATCH_MS} in all (ms/query ≥ its resolution). */
export function queryMsMeasured(row: Pick<ConfigResult, 'questions' | 'meanQueryMs'>): boolean {
  return Number.isFinite(row.meanQueryMs) && row.meanQueryMs >= queryMsResolution(row);
}

/** ms/query for reading: `fmtTime(x)` when measured, else `< r` with the row's resolution r (`< 2.50` for 40 questions). */
export function fmtQueryMs(row: Pick<ConfigResult, 'questions' | 'meanQueryMs'>): string {
  return queryMsMeasured(row) ? fmtTime(row.meanQueryMs) : `< ${fmtTime(queryMsResolution(row))}`;
}

/**
 * Whether `fast` is clearly faster than `slow`, a difference a sentence may state: the slower row is measured, the
 * faster one takes at most half its time, and the gap is at least 0.5 ms and at least both rows' resolutions (so the
 * difference is outside the noise of either measurement).
 */
export function clearlyFaster(fast: Pick<ConfigResult, 'questions' | 'meanQueryMs'>, slow: Pick<ConfigResult, 'questions' | 'meanQueryMs'>): boolean {
  const gap = slow.meanQueryMs - fast.meanQueryMs;
  return (
    queryMsMeasured(slow) &&
    fast.meanQueryMs <= 0.5 * slow.meanQueryMs &&
    gap >= 0.5 &&
    gap >= Math.max(queryMsResolution(fast), queryMsResolution(slow))
  );
}
