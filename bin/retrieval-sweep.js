#!/usr/bin/env node
// Runs the TypeScript sources through tsx's loader, so the command works from a clone without a build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/bin.ts');
