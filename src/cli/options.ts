// The albumflow command's options, as every subcommand reads them.

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
  telegram: { type: 'string' },
  bot: { type: 'string' },
  line: { type: 'string' },
  channel: { type: 'string' },
  'public-url': { type: 'string' },
  print: { type: 'boolean', default: false },
  'no-wait': { type: 'boolean', default: false },
  token: { type: 'string' },
  'secret-token': { type: 'string' },
  'channel-secret': { type: 'string' },
  'channel-access-token': { type: 'string' },
  'expires-at': { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} satisfies ParseArgsConfig['options'];

export type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

export function parse(argv: string[]): { values: Values; positionals: string[] } {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw misuse((err as Error).message);
  }
}
