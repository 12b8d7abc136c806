/**
 * Adapters between LlamaIndex.TS and our interfaces:
 * - {@link fromLlamaIndexRetriever}: any LlamaIndex `BaseRetriever` (e.g. `VectorStoreIndex.asRetriever()` over your
 *   vector store) as one of our retrievers, so its rankings become rows of the sweep;
 * - {@link ProviderEmbedding}: any of our embedding providers as a LlamaIndex `BaseEmbedding` (so a LlamaIndex index
 *   embeds with exactly the model the sweep measures).
 *
 * Quirk: `VectorStoreIndex` embeds a node's metadata together with its text unless the metadata keys are excluded
 * (`MetadataMode.EMBED`); build nodes without metadata (or set `excludedEmbedMetadataKeys`) so the text embedded is
 * the chunk's text, as the sweep's own semantic rows embed it.
 */
import { BaseEmbedding, extractSingleText, type MessageContentDetail } from 'llamaindex';
import type { BaseRetriever } from 'llamaindex';
import type { EmbeddingProvider } from '../embed/provider.js';
import type { RetrievedHit, RetrieverContext, RetrieverFactory } from './retriever.js';

/** The parts of a LlamaIndex `NodeWithScore` the adapter reads. */
interface NodeWithScoreLike {
  node: { id_: string; metadata?: Record<string, unknown> };
  score?: number;
}

/** Options of {@link fromLlamaIndexRetriever}. */
export interface LlamaIndexAdapterOptions {
  /**
   * The id a node stands for: a chunk id of the chunking or a document id. Default: `node.id_` (build nodes with
   * `id_: chunk.id`).
   */
  idOf?: (node: NodeWithScoreLike['node']) => string;
}

/**
 * Wraps a LlamaIndex retriever as a {@link RetrieverFactory}: `make(ctx)` builds the `BaseRetriever` over the chunks it
 * receives; each question is sent as `retrieve({ query: text })`, and each returned node becomes a hit `{ id, score }`.
 * LlamaIndex decides how many nodes it returns (`similarityTopK`): set it to at least the sweep's depth (the largest
 * top-k); the harness cuts longer lists. A node without a score is an error (reported by the harness as a failed row).
 */
export function fromLlamaIndexRetriever(
  make: (ctx: RetrieverContext) => Promise<BaseRetriever> | BaseRetriever,
  options: LlamaIndexAdapterOptions = {},
): RetrieverFactory {
  const idOf = options.idOf ?? ((n) => n.id_);
  return async (ctx) => {
    const retriever = await make(ctx);
    return {
      async search(question): Promise<RetrievedHit[]> {
        const nodes = (await retriever.retrieve({ query: question.text })) as unknown as NodeWithScoreLike[];
        return nodes.map((n) => ({ id: idOf(n.node), score: n.score as number }));
      },
      describe: () => ({ adapter: 'llamaindex BaseRetriever', class: retriever.constructor.name }),
    };
  };
}

/**
 * One of our providers as a LlamaIndex `BaseEmbedding`: documents through `embedBatch(texts, 'document')` (one call per
 * LlamaIndex batch of `batchSize`), queries through `embedBatch([q], 'query')`, so role prefixes apply as in the sweep.
 * Vectors are returned as plain number arrays (float32 values widened to float64).
 */
export class ProviderEmbedding extends BaseEmbedding {
  readonly provider: EmbeddingProvider;

  constructor(provider: EmbeddingProvider, batchSize = 32) {
    super();
    this.provider = provider;
    this.embedBatchSize = batchSize;
    // BaseEmbedding defines getTextEmbeddings as an instance property (one getTextEmbedding call per text); replace it
    // with one embedBatch call per LlamaIndex batch.
    this.getTextEmbeddings = async (texts: string[]): Promise<number[][]> => this.embed(texts, 'document');
  }

  /** Embeds `texts` for `role`; override to count or time calls. */
  protected async embed(texts: string[], role: 'document' | 'query'): Promise<number[][]> {
    const vecs = await this.provider.embedBatch(texts, role);
    return vecs.map((v) => Array.from(v));
  }

  async getTextEmbedding(text: string): Promise<number[]> {
    return (await this.embed([text], 'document'))[0];
  }

  override async getQueryEmbedding(query: MessageContentDetail): Promise<number[] | null> {
    const text = extractSingleText(query);
    if (text === null) return null;
    return (await this.embed([text], 'query'))[0];
  }
}
