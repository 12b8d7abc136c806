/**
 * `retrieval-sweep schema [--out DIR] [--stdout]`: writes the JSON Schemas of a config and of a questions.jsonl line
 * (src/config/json-schema.ts) to DIR (default `./schema`) as config.schema.json and question.schema.json, or prints
 * them as one JSON object `{"config": ..., "question": ...}` with `--stdout`. Registered on the program by
 * {@link registerSchemaCommand}; never exits (src/cli/main.ts does).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { jsonSchemas, SCHEMA_FILES, schemaFileText } from '../config/json-schema.js';
import { HarnessError } from '../errors.js';

/** Options of the schema command. */
export interface SchemaCommandOptions {
  /** Folder to write the two files into; created when missing. Default `schema` (relative to the working directory). */
  out?: string;
  /** Print instead of writing files. Default false. */
  stdout?: boolean;
}

/**
 * Runs the schema command: writes (or, with `stdout`, returns) the schemas.
 * @returns the text for stdout (the JSON with `stdout`, else empty) and for stderr (the files written).
 * @throws HarnessError `OUTPUT_INVALID` when the folder cannot be created or a file cannot be written.
 */
export function runSchemaCommand(opts: SchemaCommandOptions = {}): { stdout: string; stderr: string } {
  const schemas = jsonSchemas();
  if (opts.stdout) return { stdout: schemaFileText(schemas), stderr: '' };
  const dir = path.resolve(opts.out ?? 'schema');
  const written: string[] = [];
  try {
    mkdirSync(dir, { recursive: true });
    for (const key of ['config', 'question'] as const) {
      const file = path.join(dir, SCHEMA_FILES[key]);
      writeFileSync(file, schemaFileText(schemas[key]));
      written.push(file);
    }
  } catch (e) {
    throw new HarnessError('OUTPUT_INVALID', `cannot write the JSON Schemas to ${dir}: ${(e as Error).message}`, {
      location: { file: dir },
      remedy: 'pass a writable folder with --out, or --stdout to print them',
      cause: e,
    });
  }
  return { stdout: '', stderr: `wrote ${written.join(', ')}` };
}

/** Adds the `schema` subcommand to `program`. */
export function registerSchemaCommand(program: Command): void {
  program
    .command('schema')
    .description('write the JSON Schemas of a config and of a questions.jsonl line (for editor completion)')
    .option('-o, --out <dir>', 'folder to write config.schema.json and question.schema.json into', 'schema')
    .option('--stdout', 'print {"config": ..., "question": ...} instead of writing files')
    .action((opts: SchemaCommandOptions) => {
      const out = runSchemaCommand(opts);
      if (out.stderr) process.stderr.write(`${out.stderr}\n`);
      if (out.stdout) process.stdout.write(out.stdout);
    });
}
