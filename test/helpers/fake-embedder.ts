/**
 * A tiny embedding provider for the embedding and file-backed semantic tests: text t → [t.length, code of its first
 * character (0 for ''), 3], so every vector can be worked out by hand. `poison` makes it return NaN for that one text
 * (to test the provider-error path); `embedded` records every text sent to `embedBatch`, in order (to count model
 * calls against the cache).
 */
import { formatCacheKey, type EmbeddingProvider, type EmbedRole } from '../../src/embed/provider.js';

export class FakeEmbedder implements EmbeddingProvider {
  readonly name = 'fake';
  readonly label = 'fake';
  readonly dimensions = 3;
  /** Every text embedded so far, in call order. */
  readonly embedded: string[] = [];
  constructor(readonly poison?: string) {}
  cacheKey(role: EmbedRole): string {
    return formatCacheKey('fake', { role });
  }
  async embedBatch(texts: readonly string[]): Promise<Float32Array[]> {
    this.embedded.push(...texts);
    return texts.map((t) => Float32Array.from([t === this.poison ? Number.NaN : t.length, t.charCodeAt(0) || 0, 3]));
  }
  truncatedCount(): number {
    return 0;
  }
  describe(): Record<string, unknown> {
    return {};
  }
  async close(): Promise<void> {}
}
