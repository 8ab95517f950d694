import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findProjectRoot(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'migrations'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`albumflow: no project root above ${start}`);
  }
}

/** The project root, whether running from sources (tsx) or from the compiled `dist/` tree. */
export const projectRoot = findProjectRoot(path.dirname(fileURLToPath(import.meta.url)));
export const migrationsDir = path.join(projectRoot, 'migrations');

/** Where albumflow keeps its state when DATA_DIR is unset (relative to the working directory). */
export const defaultDataDir = '.data';
