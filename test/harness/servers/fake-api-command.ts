// What `npm run fake-bot-api` and `npm run fake-line-api` share: their command line, the message when
// they cannot listen, quoting for the shell lines they print, and stopping on Ctrl-C.

import path from 'node:path';
import { parseArgs } from 'node:util';

export interface FakeApiCommand {
  port: number;
  /** The files named on the command line, absolute; the example file when none is. */
  files: string[];
  /** A file as the person typed it, relative to where they are. */
  relative: (file: string) => string;
}

/** Reads `[--port N] [file …]`; prints `usage` for --help, and exits 2 on a port that is no port. */
export function fakeApiCommand(options: { name: string; usage: string; defaultPort: number; exampleFile: string }): FakeApiCommand {
  const { values, positionals } = parseArgs({
    options: { port: { type: 'string', default: String(options.defaultPort) }, help: { type: 'boolean', short: 'h', default: false } },
    allowPositionals: true,
  });
  if (values.help) {
    console.log(options.usage);
    process.exit(0);
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`${options.name}: --port must be a port number, not "${values.port}"`);
    process.exit(2);
  }
  return {
    port,
    files: positionals.length > 0 ? positionals.map((file) => path.resolve(file)) : [options.exampleFile],
    relative: (file) => path.relative(process.cwd(), file) || file,
  };
}

/** Ends the process with a message saying what to do when the fake cannot listen on its port. */
export function cannotListen(name: string, port: number): (err: NodeJS.ErrnoException) => never {
  return (err) => {
    console.error(`${name}: cannot listen on 127.0.0.1:${port} (${err.code ?? err.message}); pass --port with another port, or 0 for any`);
    process.exit(1);
  };
}

/** `text` as one word for a POSIX shell. */
export const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** Closes `api` and exits 0 on Ctrl-C or SIGTERM. */
export function closeOnSignals(api: { close(): Promise<void> }): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void api.close().then(() => process.exit(0));
    });
  }
}
