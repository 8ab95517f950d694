// The console over a running stack (test/helpers/stack.ts), behind the test access shim, with the
// operator-action routes its buttons call: as an app for `inject`, or on a port of its own for a browser.
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Stack } from '../helpers/stack.js';
import { actionRoutes } from '../../src/http/actions.js';
import { handleError } from '../../src/http/errors.js';
import { consolePlugin } from '../../src/ui/console.js';
import { testAccessShim, type TestTokens } from './access-shim.js';

export interface ConsoleAppOptions {
  logger?: FastifyInstance['log'];
}

export async function consoleApp(stack: Pick<Stack, 'config' | 'pool' | 'client'>, tokens: TestTokens, options: ConsoleAppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({ routerOptions: { maxParamLength: 2048 }, ...(options.logger ? { loggerInstance: options.logger } : {}) });
  app.setErrorHandler(handleError);
  await app.register(actionRoutes, { config: stack.config, pool: stack.pool, temporal: stack.client });
  await app.register(consolePlugin, {
    config: stack.config,
    pool: stack.pool,
    access: testAccessShim(tokens),
    pollMs: 300,
  });
  return app;
}

export interface ConsoleServer {
  url: string;
  close(): Promise<void>;
}

export async function startConsoleServer(stack: Pick<Stack, 'config' | 'pool' | 'client'>, tokens: TestTokens): Promise<ConsoleServer> {
  const app = await consoleApp(stack, tokens);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    close: () => app.close(),
  };
}
