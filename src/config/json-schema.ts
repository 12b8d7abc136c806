/**
 * JSON Schemas of the two files users write, generated from the zod schemas that validate them, so the two can
 * never disagree: `schema/config.schema.json` (a sweep config, from `configSchema`) and
 * `schema/question.schema.json` (one questions.jsonl line, from `questionLineSchema`). Both are JSON Schema
 * draft-07 (the draft yaml-language-server and VS Code read) and describe the written form (`io: 'input'`): keys
 * with defaults are optional and carry `default`, descriptions come from each key's `.describe()`.
 *
 * A YAML config gets completion and hover text in editors with a first line
 * `# yaml-language-server: $schema=../schema/config.schema.json`.
 */
import { z } from 'zod';
import { embeddingSpecInputSchema, embeddingSpecSchema } from '../embed/spec.js';
import { questionLineSchema } from '../load/question-schema.js';
import { configSchema } from './schema.js';

/** File names inside the schema folder, as shipped in the package. */
export const SCHEMA_FILES = { config: 'config.schema.json', question: 'question.schema.json' } as const;

type JsonObject = Record<string, unknown>;

function generate(schema: z.ZodType, title: string): JsonObject {
  const out = z.toJSONSchema(schema, {
    target: 'draft-7',
    io: 'input',
    unrepresentable: 'any',
    override(ctx) {
      // An embedding entry is parsed through a preprocess + transform (string shorthand → object → resolved spec);
      // its written form is the union of the shorthand and the object.
      if (ctx.zodSchema === (embeddingSpecSchema as unknown)) {
        const written = z.toJSONSchema(embeddingSpecInputSchema, { target: 'draft-7', io: 'input' }) as JsonObject;
        delete written.$schema;
        for (const k of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as JsonObject)[k];
        Object.assign(ctx.jsonSchema, written);
      }
    },
  }) as JsonObject;
  const { $schema, ...rest } = out;
  return { $schema, title, ...rest };
}

/**
 * The JSON Schemas of a sweep config and of one questions.jsonl line (plain JSON objects, deterministic: the same
 * schemas give the same objects, key order included).
 */
export function jsonSchemas(): { config: JsonObject; question: JsonObject } {
  return {
    config: generate(configSchema, 'retrieval-sweep config'),
    question: generate(questionLineSchema, 'retrieval-sweep questions.jsonl line'),
  };
}

/** A schema as written to its file: two-space indented JSON and a final newline. */
export function schemaFileText(schema: object): string {
  return `${JSON.stringify(schema, null, 2)}\n`;
}
