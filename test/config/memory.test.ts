/**
 * Issue 25 item 1: `limits.memory`: its written forms, its shares, and the floor `validate` and `run` refuse.
 */
import { describe, expect, it } from 'vitest';
import { isHarnessError, type HarnessError } from '../../src/errors.js';
import { checkMemoryFloor, corpusFloorWarning, memoryFloor, memoryShares, parseByteSize } from '../../src/config/memory.js';
import { parseConfig } from '../../src/config/schema.js';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

describe('parseByteSize: bytes, or <number><unit> in powers of 1024', () => {
  it('numbers are bytes; units B KB MB GB TB (and KiB ... TiB), any case, an optional space, fractions floored', () => {
    expect(parseByteSize(8589934592)).toBe(8 * GiB);
    expect(parseByteSize('12GB')).toBe(12 * 1024 * 1024 * 1024);
    expect(parseByteSize('512mb')).toBe(512 * 1024 * 1024);
    expect(parseByteSize('1.5 GiB')).toBe(1.5 * 1024 * 1024 * 1024);
    expect(parseByteSize('3KB')).toBe(3 * 1024);
    expect(parseByteSize('1TB')).toBe(1024 ** 4);
    expect(parseByteSize('0.1KB')).toBe(Math.floor(0.1 * 1024));
    expect(parseByteSize('100B')).toBe(100);
  });

  it('anything else is null: no unit, an unknown unit, a negative or fractional byte count', () => {
    for (const bad of ['12', '12 G', '12GBs', '-1GB', 'GB', '', 1.5, -1]) expect(parseByteSize(bad)).toBeNull();
  });
});

describe('memoryShares', () => {
  it('12 GiB: a quarter each to the dense matrices and the BM25 build, the shard buffer 1/64 (192 MiB) capped at 16 MiB, an eighth (1.5 GiB) to the finished BM25 postings, a sixteenth (768 MiB) to the documents', () => {
    expect(memoryShares(12 * GiB)).toEqual({
      limitBytes: 12 * GiB,
      denseResidentBytes: (12 * GiB) / 4,
      denseShardBytes: 16 * MiB,
      bm25BuildBytes: (12 * GiB) / 4,
      bm25ResidentBytes: 1536 * MiB, // 12 GiB / 8
      documentResidentBytes: 768 * MiB, // 12 GiB / 16
      vectorWriteBytes: 64 * MiB, // 12 GiB / 64 = 192 MiB → 64 MiB
      embeddingCachePageBytes: 64 * MiB, // 12 GiB / 128 = 96 MiB → 64 MiB
      embedReadWindowBytes: 256 * MiB, // 12 GiB / 32 = 384 MiB → 256 MiB
    });
    expect(memoryShares(2 * GiB).embedReadWindowBytes).toBe((2 * GiB) / 32); // 64 MiB: in range
    expect(memoryShares(256 * MiB).embedReadWindowBytes).toBe(16 * MiB); // 8 MiB → 16 MiB
    expect(memoryShares(2 * GiB).embeddingCachePageBytes).toBe((2 * GiB) / 128); // 16 MiB: in range
    expect(memoryShares(128 * MiB).embeddingCachePageBytes).toBe(2 * MiB); // 1 MiB → 2 MiB
    expect(memoryShares(2 * GiB).vectorWriteBytes).toBe((2 * GiB) / 64); // 32 MiB: in range
    expect(memoryShares(16 * MiB).vectorWriteBytes).toBe(MiB); // 256 KiB → 1 MiB
    expect(memoryShares(2 * MiB + 7).documentResidentBytes).toBe(Math.floor((2 * MiB + 7) / 16)); // 131,072
    expect(memoryShares(2 * MiB + 7).bm25ResidentBytes).toBe(262_144); // floor(2,097,159 / 8)
  });

  it('the shard buffer is clamped to [64 KiB, 16 MiB]', () => {
    expect(memoryShares(512 * MiB).denseShardBytes).toBe((512 * MiB) / 64); // 8 MiB: in range
    expect(memoryShares(128 * GiB).denseShardBytes).toBe(16 * MiB); // 128 GiB/64 = 2 GiB → 16 MiB
    expect(memoryShares(2 * MiB).denseShardBytes).toBe(64 * 1024); // 2 MiB/64 = 32 KiB → 64 KiB
    expect(memoryShares(2 * MiB + 3).denseResidentBytes).toBe(Math.floor((2 * MiB + 3) / 4));
  });

  it('a limit below 1 MiB or not whole is refused naming limits.memory', () => {
    for (const bad of [MiB - 1, 1.5 * MiB + 0.5]) {
      let e: unknown;
      try {
        memoryShares(bad);
      } catch (x) {
        e = x;
      }
      expect(isHarnessError(e, 'CONFIG_INVALID')).toBe(true);
      expect((e as HarnessError).location?.path).toBe('limits.memory');
    }
  });
});

describe('the memory floor', () => {
  it('rankings: configurations × scored questions × 4 KB, plus one shard buffer when a mode is dense', () => {
    expect(memoryFloor(6, 300, false, 12 * GiB)).toEqual({ rankingsBytes: 6 * 300 * 4096, denseBytes: 0, totalBytes: 6 * 300 * 4096 });
    expect(memoryFloor(6, 300, true, 12 * GiB).totalBytes).toBe(6 * 300 * 4096 + 16 * MiB);
    expect(memoryFloor(6, 300, true, 256 * MiB).totalBytes).toBe(6 * 300 * 4096 + (256 * MiB) / 64);
  });

  it('refused above the limit: CONFIG_INVALID at limits.memory naming the limit, the floor and its parts, with a remedy', () => {
    // 1,000 configurations × 300 questions × 4 KB = 1,228,800,000 bytes > 1 GiB; + 16 MiB of shard buffer
    let e: unknown;
    try {
      checkMemoryFloor(1000, 300, true, GiB, '/x/sweep.yaml');
    } catch (x) {
      e = x;
    }
    expect(isHarnessError(e, 'CONFIG_INVALID')).toBe(true);
    const he = e as HarnessError;
    expect(he.location).toEqual({ file: '/x/sweep.yaml', path: 'limits.memory' });
    const floor = 1000 * 300 * 4096 + GiB / 64;
    expect(he.message).toContain(`limits.memory (${GiB} bytes, 1 GiB) is below the plan's memory floor of ${(floor / GiB).toFixed(2)} GiB`);
    expect(he.message).toContain('1000 configurations × 300 scored questions × 4 KB of rankings');
    expect(he.message).toContain("the dense search's shard buffer (16 MiB)");
    expect(he.remedy).toContain(`raise limits.memory to at least ${(floor / GiB).toFixed(2)} GiB`);
  });

  it('with a corpus: documents × 64 B + resident texts (a byte a code unit) + chunkings × documents with text × 120 B', () => {
    const corpus = { documents: 1000, documentsWithText: 990, residentTextUnits: 500_000, chunkings: 2 };
    // 6 × 300 × 4096 = 7,372,800; 1000 × 64 + 500,000 = 564,000; 2 × 990 × 120 = 237,600
    expect(memoryFloor(6, 300, false, 12 * GiB, corpus)).toEqual({
      rankingsBytes: 7_372_800,
      denseBytes: 0,
      documentsBytes: 564_000,
      chunksBytes: 237_600,
      totalBytes: 7_372_800 + 564_000 + 237_600,
    });
    // texts in a store: only the ids and objects stay (1000 × 64)
    expect(memoryFloor(6, 300, false, 12 * GiB, { ...corpus, residentTextUnits: 0 }).documentsBytes).toBe(64_000);
    // 8,174,400 bytes fit 8 MiB (8,388,608); ten chunkings add 8 × 990 × 120 = 950,400 more and do not
    expect(checkMemoryFloor(6, 300, false, 8 * MiB, undefined, corpus).totalBytes).toBe(8_174_400);
    let e: unknown;
    try {
      checkMemoryFloor(6, 300, false, 8 * MiB, undefined, { ...corpus, chunkings: 10 });
    } catch (x) {
      e = x;
    }
    expect(isHarnessError(e, 'CONFIG_INVALID')).toBe(true);
    // 564,000 B = 550.78 KiB; 10 × 990 × 120 = 1,188,000 B = 1.13 MiB
    expect((e as Error).message).toContain(' + 1000 documents (550.8 KiB, their texts in memory)');
    expect((e as Error).message).toContain(' + 10 chunking(s) × 990 documents with text × 120 B of chunks (1.1 MiB)');
    // run and validate warn with the same parts (a warning: the corpus parts are estimates)
    expect(corpusFloorWarning(6, 300, false, 8 * MiB, corpus)).toBeUndefined();
    const w = corpusFloorWarning(6, 300, false, 8 * MiB, { ...corpus, chunkings: 10 });
    // 7,372,800 + 564,000 + 1,188,000 = 9,124,800 B = 8.70 MiB → "8.7 MiB"
    expect(w).toContain('limits.memory (8 MiB) is below the plan\'s estimated resident memory of 8.7 MiB');
    expect(w).toContain('+ 1000 documents 550.8 KiB (texts in memory) + 10 chunking(s) × 990 documents with text × 120 B of chunks 1.1 MiB');
  });

  it('at the limit exactly it passes and returns the floor', () => {
    const limit = 10 * 20 * 4096 + 64 * 1024; // 2 MiB/64 < 64 KiB: the shard buffer is 64 KiB at this limit
    expect(limit).toBeLessThan(4 * MiB);
    expect(checkMemoryFloor(10, 20, true, Math.max(limit, 2 * MiB)).totalBytes).toBe(10 * 20 * 4096 + 64 * 1024);
  });
});

describe('limits.memory in the config', () => {
  const base = { dataset: { path: '/tmp/x' } };

  it('default 12 GiB; a number of bytes or a size string', () => {
    expect(parseConfig(base).limits.memory).toBe(12 * GiB);
    expect(parseConfig({ ...base, limits: { memory: '8GB' } }).limits.memory).toBe(8 * GiB);
    expect(parseConfig({ ...base, limits: { memory: 3 * MiB } }).limits.memory).toBe(3 * MiB);
    // the other limits keep their defaults when only memory is written
    expect(parseConfig({ ...base, limits: { memory: '8GB' } }).limits).toEqual({ maxConfigurations: 10000, stallSeconds: 300, memory: 8 * GiB });
  });

  it('a bad value is refused at limits.memory, naming the value', () => {
    for (const bad of ['lots', '12', 1000, '0.5KB']) {
      let e: unknown;
      try {
        parseConfig({ ...base, limits: { memory: bad } });
      } catch (x) {
        e = x;
      }
      expect(isHarnessError(e, 'CONFIG_INVALID')).toBe(true);
      expect((e as Error).message).toContain('limits.memory');
      expect((e as Error).message).toContain(JSON.stringify(bad));
    }
  });
});
