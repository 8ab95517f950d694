// The albumflow command's options, as every subcommand reads them; each platform adds its own
// (src/platforms/<platform>/cli.ts).

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { misuse } from './api.js';

const options = {
  url: { type: 'string', default: process.env.ALBUMFLOW_URL ?? 'http://127.0.0.1:3000' },
  json: { type: 'boolean', default: false },
  review: { type: 'boolean', default: false },
  state: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  note: { type: 'string', default: '' },
  workspace: { type: 'string', default: 'demo' },
  secret: { type: 'string' },
  'public-url': { type: 'string' },
  print: { type: 'boolean', default: false },
  now: { type: 'boolean', default: false },
  'no-wait': { type: 'boolean', default: false },
  'expires-at': { type: 'string' },
  types: { type: 'string' },
  description: { type: 'string' },
  'rate-limit': { type: 'string' },
  since: { type: 'string' },
  after: { type: 'string' },
  follow: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} satisfies ParseArgsConfig['options'];

type CoreValues = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

/** The command's own options, typed, beside the platforms' (read by name). */
export type Values = CoreValues & { readonly [name: string]: string | boolean | undefined };

export function parse(argv: string[], platformOptions: ParseArgsConfig['options']): { values: Values; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...platformOptions, ...options },
      allowPositionals: true,
      strict: true,
    });
    return { values, positionals };
  } catch (err) {
    throw misuse((err as Error).message);
  }
}
