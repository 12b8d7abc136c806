/**
 * Issue 13 §3: a model that cannot be found behaves the same whether it is a hub id or a folder (an up-front
 * MODEL_NOT_FOUND), and the error lists every missing file at once.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HarnessError } from '../../src/errors.js';
import { preflightTransformersModel, requiredModelFiles } from '../../src/embed/transformers.js';

let root: string;
let cacheDir: string;
beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'rs-mnf-'));
  cacheDir = path.join(root, 'cache');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A folder holding only `files` (empty contents). */
function folderWith(dir: string, files: string[]): string {
  mkdirSync(path.join(dir, 'onnx'), { recursive: true });
  for (const f of files) writeFileSync(path.join(dir, f), '{}');
  return dir;
}

function errorOf(f: () => void): HarnessError {
  try {
    f();
  } catch (e) {
    if (e instanceof HarnessError) return e;
    throw e;
  }
  throw new Error('expected a HarnessError');
}

describe('model not found', () => {
  it('a folder with only config.json: one error listing tokenizer.json, tokenizer_config.json and onnx/model.onnx', () => {
    const dir = folderWith(path.join(root, 'partial'), ['config.json']);
    const e = errorOf(() => preflightTransformersModel({ model: `transformers:${dir}`, dtype: 'fp32', allowRemote: false }, cacheDir));
    expect(e.code).toBe('MODEL_NOT_FOUND');
    expect(e.message).toContain(`tokenizer.json, tokenizer_config.json, onnx/model.onnx are missing in ${dir}`);
  });

  it('a hub id whose cache folder lacks the same files gives the same up-front error', () => {
    const dir = folderWith(path.join(cacheDir, 'models', 'Xenova', 'partial'), ['config.json']);
    const e = errorOf(() => preflightTransformersModel({ model: 'transformers:Xenova/partial', dtype: 'fp32', allowRemote: false }, cacheDir));
    expect(e.code).toBe('MODEL_NOT_FOUND');
    expect(e.message).toContain(`tokenizer.json, tokenizer_config.json, onnx/model.onnx are missing in ${dir}`);
  });

  it('an absent folder and an absent hub id both list every file a model needs', () => {
    const missing = path.join(root, 'nowhere');
    for (const model of [`transformers:${missing}`, 'transformers:Xenova/absent']) {
      const e = errorOf(() => preflightTransformersModel({ model, dtype: 'q8', allowRemote: false }, cacheDir));
      expect(e.code).toBe('MODEL_NOT_FOUND');
      expect(e.message).toContain(`missing: ${requiredModelFiles('q8').join(', ')}`);
    }
  });

  it('a hub id with allowRemote true and no local folder is not an error (it will be downloaded)', () => {
    expect(() => preflightTransformersModel({ model: 'transformers:Xenova/absent', dtype: 'fp32', allowRemote: true }, cacheDir)).not.toThrow();
  });

  it('a complete folder passes', () => {
    const dir = folderWith(path.join(root, 'complete'), requiredModelFiles('fp32'));
    expect(() => preflightTransformersModel({ model: `transformers:${dir}`, dtype: 'fp32', allowRemote: false }, cacheDir)).not.toThrow();
  });
});
