/**
 * The `--config FILE` of `judge` and `generate`: a YAML or JSON object with the chat model's options (one zod schema,
 * {@link chatConfigSchema}, is the single source of validation; an unknown key is named with the nearest known key),
 * merged under the command-line flags (`--model`, `--base-url`, `--api-key-env` win over the file).
 */
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { describeIssues } from '../config/issues.js';
import { HarnessError } from '../errors.js';
import type { ChatOptions } from './chat.js';

const positiveInt = z.number().int().min(1, 'must be a whole number ≥ 1');
const price = z.number().min(0, 'must be ≥ 0').nullable();

/** Keys of a chat config file; every key optional (flags supply `model` and `baseUrl` when the file does not). */
export const chatConfigSchema = z
  .object({
    model: z.string().startsWith('openai-chat:', 'must start with openai-chat:').optional().describe('openai-chat:<model>'),
    baseUrl: z.string().optional().describe('Server address with /v1, e.g. http://127.0.0.1:8000/v1.'),
    apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be the NAME of an environment variable').nullable().optional(),
    concurrency: positiveInt.optional().describe('Requests in flight at once (default 4).'),
    requestsPerMinute: positiveInt.nullable().optional(),
    tokensPerMinute: positiveInt.nullable().optional(),
    timeoutMs: positiveInt.optional().describe('Per-attempt timeout in ms (default 120000).'),
    maxRetries: z.number().int().min(0).optional().describe('Retries of 429/5xx/timeouts/resets (default 5).'),
    temperature: z.number().min(0).max(2).optional().describe('Sampling temperature (default 0).'),
    seed: z.number().int().nullable().optional(),
    maxTokens: positiveInt.nullable().optional(),
    pricePer1kInput: price.optional(),
    pricePer1kOutput: price.optional(),
    backoffBaseMs: z.number().min(0).optional().describe('First retry backoff in ms (default 500).'),
    backoffMaxMs: z.number().min(0).optional().describe('Cap of one backoff in ms (default 30000).'),
  })
  .strict();

/** A parsed chat config file. */
export type ChatConfigFile = z.output<typeof chatConfigSchema>;

/**
 * Reads and validates a chat config file (YAML; JSON is YAML).
 * @throws HarnessError `CONFIG_NOT_FOUND` (missing file), `CONFIG_INVALID` (syntax, or every bad/unknown key listed
 *   with its value; an `apiKeyEnv` value is never echoed).
 */
export function loadChatConfigFile(file: string): ChatConfigFile {
  if (!existsSync(file)) {
    throw new HarnessError('CONFIG_NOT_FOUND', `chat config file not found: ${file}`, {
      location: { file },
      remedy: 'pass a YAML or JSON file with the model options (see docs/judging.md), or leave --config out',
    });
  }
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new HarnessError('CONFIG_INVALID', `cannot parse ${file} as YAML or JSON: ${(e as Error).message.split('\n')[0]}`, {
      location: { file },
      remedy: 'fix the syntax',
      cause: e,
    });
  }
  const r = chatConfigSchema.safeParse(doc ?? {});
  if (!r.success) {
    const problems = describeIssues(chatConfigSchema, doc ?? {}, r.error.issues);
    throw new HarnessError('CONFIG_INVALID', `invalid chat config:\n  - ${problems.join('\n  - ')}`, {
      location: { file },
      remedy: 'fix the keys listed above; docs/judging.md lists every key',
    });
  }
  return r.data;
}

/** Flags of `judge`/`generate` that name the model. */
export interface ChatFlags {
  model?: string;
  baseUrl?: string;
  apiKeyEnv?: string;
}

/**
 * The chat options: the file's keys, overridden by the flags.
 * @throws HarnessError `USAGE` when neither names the model or the base URL.
 */
export function resolveChatOptions(file: ChatConfigFile | undefined, flags: ChatFlags): ChatOptions {
  const merged = { ...(file ?? {}) } as ChatConfigFile;
  if (flags.model !== undefined) merged.model = flags.model;
  if (flags.baseUrl !== undefined) merged.baseUrl = flags.baseUrl;
  if (flags.apiKeyEnv !== undefined) merged.apiKeyEnv = flags.apiKeyEnv;
  if (flags.model !== undefined && !flags.model.startsWith('openai-chat:')) {
    throw new HarnessError('USAGE', `--model ${JSON.stringify(flags.model)} is not openai-chat:<model>`, {
      remedy: `pass --model openai-chat:${flags.model} (the served model's name after the prefix)`,
    });
  }
  if (merged.model === undefined) {
    throw new HarnessError('USAGE', 'no model given', { remedy: 'pass --model openai-chat:<name> (or model: in --config)' });
  }
  if (merged.baseUrl === undefined) {
    throw new HarnessError('USAGE', 'no server address given', {
      remedy: 'pass --base-url http://127.0.0.1:8000/v1 (or baseUrl: in --config)',
    });
  }
  return { ...merged, model: merged.model, baseUrl: merged.baseUrl };
}
