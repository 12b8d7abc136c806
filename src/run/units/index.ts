/**
 * The registry of unit kinds (issue 23): one handler per `UnitKind`, one file each. Adding a kind (a new engine, the
 * labelling pool) is a new file here and one line below; the executor (src/run/execute.ts) and `runSweep` do not
 * change.
 */
import type { UnitKind } from '../../plan/graph.js';
import type { UnitKindHandler } from './types.js';
import { chunkingUnit } from './chunking.js';
import { keywordUnit } from './keyword.js';
import { embeddingUnit } from './embedding.js';
import { denseUnit } from './dense.js';
import { fusionUnit } from './fusion.js';
import { externalUnit } from './external.js';
import { runUnit } from './run.js';
import { rerankUnit } from './rerank.js';
import { scoringUnit } from './scoring.js';

/** Every unit kind's handler, by kind. */
export const UNIT_KINDS: ReadonlyMap<UnitKind, UnitKindHandler> = new Map(
  [chunkingUnit, keywordUnit, embeddingUnit, denseUnit, fusionUnit, externalUnit, runUnit, rerankUnit, scoringUnit].map((h) => [h.kind, h]),
);
