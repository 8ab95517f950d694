#!/usr/bin/env node
// Runs the compiled CLI when the project was built, the TypeScript sources otherwise.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const compiled = fileURLToPath(new URL('../dist/src/albumflow.js', import.meta.url));
if (existsSync(compiled)) {
  await import(pathToFileURL(compiled).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../src/albumflow.ts', import.meta.url).href);
}
