// A LlamaIndex.TS retriever as a row of the sweep: VectorStoreIndex.asRetriever() over the chunks the harness hands
// over, embedding with one of retrieval-sweep's providers through LlamaIndex's BaseEmbedding interface. Swap the
// index for your own vector store (PGVectorStore, QdrantVectorStore, ...) and keep the node ids = chunk ids.
import { Settings, TextNode, VectorStoreIndex } from 'llamaindex';
import { ProviderEmbedding, createProvider, fromLlamaIndexRetriever, resolveEmbeddingSpec } from 'retrieval-sweep';

export default fromLlamaIndexRetriever(async ({ chunks, options, cacheDir }) => {
  const provider = await createProvider(resolveEmbeddingSpec(options.model ?? 'glove-100d'), { cacheDir });
  const embedModel = new ProviderEmbedding(provider);
  // No metadata on the nodes: VectorStoreIndex would otherwise embed "key: value" lines with the text.
  const nodes = chunks.map((c) => new TextNode({ id_: c.id, text: c.text }));
  const index = await Settings.withEmbedModel(embedModel, () => VectorStoreIndex.init({ nodes }));
  return index.asRetriever({ similarityTopK: options.topK ?? 10 });
});
