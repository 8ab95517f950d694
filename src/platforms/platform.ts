// What a platform is to the rest of albumflow: the one interface each folder under src/platforms/
// implements (./<platform>/index.ts) and ./index.ts registers. Nothing outside src/platforms/ names a
// platform folder; everything goes through this interface.

import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import type { ParseArgsConfig } from 'node:util';
import type { Config } from '../common/config.js';
import type { StoredAttachment } from '../db/attachments.js';
import type { AlbumProfile, MessageKey } from '../domain/types.js';
import type { MediaApi } from './api.js';
import type { WebhookRouteOptions } from './webhook-route.js';

export interface Platform {
  /** The `source` of its events and albums, and its webhooks' path: `/webhooks/<name>/…`. */
  name: string;
  /** What its albums promise (most children, order of children), carried to the album's workflow. */
  albumProfile: AlbumProfile;
  /** Its webhook route (./webhook-route.ts), registered in the webhook plugin (./webhooks.ts); the configuration as the route reads it. */
  route: (config: Config) => FastifyPluginCallbackTypebox<WebhookRouteOptions>;
  /** The platform's API for the files of attachments that have no URL. */
  media?: PlatformMedia;
  /** Its commands of the albumflow CLI. */
  cli: PlatformCli;
}

export interface PlatformMedia {
  /**
   * The API that serves this attachment's file, with credentials read from `config` now (they may have
   * been rotated since the child was stored); null when the attachment is not one of this platform's.
   */
  api(config: Config, attachment: StoredAttachment, key: MessageKey): MediaApi | null;
  /**
   * The API that serves the attachment's still (a Telegram live photo's photo, downloaded beside its video),
   * as `api` serves its file; null when the attachment has none.
   */
  still?(config: Config, attachment: StoredAttachment, key: MessageKey): MediaApi | null;
}

export interface PlatformCli {
  /** The options its commands read (node:util parseArgs), beside the CLI's own. */
  options: NonNullable<ParseArgsConfig['options']>;
  /** Its lines of `albumflow help`: usage, then options. */
  help: { usage: string; options: string };
  /** The option that names the file `albumflow send --<option> FILE` sends as this platform; null for the plain `send FILE`. */
  sendOption: string | null;
  /** `albumflow send`: posts the file's bodies to the platform's webhook route as the platform would. */
  send: (cli: CliContext, file: string) => Promise<void>;
  /** `albumflow <name> <command> …` */
  commands: Record<string, (cli: CliContext, args: string[]) => Promise<void>>;
}

/** What the albumflow CLI gives a platform's commands (src/albumflow.ts). */
export interface CliContext {
  /** --workspace (default `demo`). */
  workspace: string;
  /** A string option's value; undefined when not given. */
  option: (name: string) => string | undefined;
  /** A boolean option. */
  flag: (name: string) => boolean;
  /** albumflow's HTTP API: a refused request or an unreachable server throws the CLI's error. */
  api: CliApi;
  /** Prints a line (the caller escapes what a sender wrote: src/common/terminal.ts). */
  say: (text: string) => void;
  /** The command failed (exit 1). */
  fail: (message: string) => Error;
  /** The command line cannot be run (exit 2), with where the usage is. */
  misuse: (message: string) => Error;
  /** The configuration read from these environment variables only, as the server reads them. */
  config: (names: readonly string[]) => Config;
  /** A file's bytes, or the CLI's error naming it. */
  readFile: (file: string) => Buffer;
}

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
interface RequestInit {
  body?: Buffer | string;
  headers?: Record<string, string>;
}

export interface CliApi {
  /** A request as a sender makes it (no API token). */
  request: (method: Method, path: string, init?: RequestInit) => Promise<{ status: number; body: unknown }>;
  /** The 2xx body of a request with the caller's API token. */
  expect: <T>(method: Method, path: string, init?: RequestInit) => Promise<T>;
  /** The error for a refusal: albumflow's code and message. */
  refusal: (status: number, body: unknown) => Error;
}
