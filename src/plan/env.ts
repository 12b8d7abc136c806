/**
 * The {@link PlanEnv} of this installation: the default tokenizer's name and the versions of the packages the
 * checkpoint keys hold (read from node_modules). Kept apart from graph.ts, which reads nothing.
 */
import { defaultTokenizer } from '../chunk/chunker.js';
import { packageVersion } from '../embed/packages.js';
import type { PlanEnv } from './graph.js';

/**
 * The plan environment; `objectRetrievers` maps the names of retrievers passed to runSweep as objects to their
 * `checkpointKey` (undefined: never checkpointed). Default: none.
 */
export function planEnv(objectRetrievers: Map<string, string | undefined> = new Map()): PlanEnv {
  return {
    tokenizer: defaultTokenizer().name,
    // The sweep's manifest reads the same version (packageVersions in src/run/sweep.ts); both via packageVersion.
    bm25Engine: packageVersion('wink-bm25-text-search'),
    lancedb: packageVersion('@lancedb/lancedb'),
    objectRetrievers,
  };
}
