import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { projectRoot } from '../common/paths.js';

/**
 * The Temporal server settings albumflow runs with, in the server's own dynamic-config format. Every
 * server reads this one file: docker-compose.yml mounts it, `npm run temporal:cluster` points its server
 * at it, and the embedded dev server gets it as `--dynamic-config-value` flags.
 */
export const dynamicConfigFile = path.join(projectRoot, 'deploy', 'temporal-dynamicconfig.yaml');

/**
 * The settings of the file, key to value. The dev server's flags set one value per key for every
 * namespace and task queue, so an entry with constraints or with several values is refused here rather
 * than applied differently by the two kinds of server.
 */
export function readDynamicConfig(file = dynamicConfigFile): Record<string, unknown> {
  const parsed: unknown = parse(fs.readFileSync(file, 'utf8'));
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`${file}: expected a mapping of setting names`);
  return Object.fromEntries(
    Object.entries(parsed).map(([key, entries]: [string, unknown]) => {
      const list: unknown[] = Array.isArray(entries) ? (entries as unknown[]) : [];
      const entry = list[0];
      const isPlainValue =
        list.length === 1 &&
        typeof entry === 'object' &&
        entry !== null &&
        'value' in entry &&
        Object.keys(entry).every((field) => field === 'value');
      if (!isPlainValue) throw new Error(`${file}: ${key} must be a list of exactly one \`- value: …\` without constraints`);
      return [key, entry.value];
    }),
  );
}

/** The file as the dev server's flags (`temporal server start-dev --dynamic-config-value KEY=JSON`). */
export function dynamicConfigFlags(file = dynamicConfigFile): string[] {
  return Object.entries(readDynamicConfig(file)).flatMap(([key, value]) => ['--dynamic-config-value', `${key}=${JSON.stringify(value)}`]);
}
