// A fake LINE Messaging API of our own, for tests and the demo (test/harness/servers/fake-line-api-main.ts);
// it never talks to LINE. One server plays both of LINE's hosts: the data API's message content
// (`GET /v2/bot/message/<id>/content`) and the Messaging API's webhook endpoint setting
// (`PUT /v2/bot/channel/webhook/endpoint`), each for the channel access tokens it knows, with the
// answers the real one gives (404 for content it does not keep, 202 while a video is still being
// prepared, 401 for a token it does not know). It logs every request, so a test can count calls and
// see where the token went.

import http from 'node:http';
import { listen } from './listen.js';

export interface FakeContent {
  content: Buffer;
  /** Default image/jpeg. */
  contentType?: string;
}

export interface RecordedLineRequest {
  at: number;
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One answer given instead of the normal one. */
export type ScriptedLineAnswer = { status: number; body?: unknown };

export type FakeLineRoute = 'content' | 'webhookEndpoint';

export interface FakeLineApi {
  /** LINE_API_ROOT and LINE_DATA_API_ROOT to give albumflow. */
  url: string;
  requests: RecordedLineRequest[];
  /** Endpoints set, by channel access token, last one last. */
  endpoints: Map<string, string[]>;
  addChannel(channelAccessToken: string): void;
  addContent(channelAccessToken: string, messageId: string, content: FakeContent): void;
  /**
   * The next request to `route` gets `answer` instead (once per call of this); with `messageId`, the next
   * request for that message's content only, whatever other downloads are under way.
   */
  failNext(route: FakeLineRoute, answer: ScriptedLineAnswer, messageId?: string): void;
  /** Requests of one route, optionally for one message id. */
  calls(route: FakeLineRoute, messageId?: string): RecordedLineRequest[];
  close(): Promise<void>;
}

const contentPath = /^\/v2\/bot\/message\/([^/]+)\/content$/;
const endpointPath = '/v2/bot/channel/webhook/endpoint';

export async function startFakeLineApi(
  options: { port?: number; onAnswered?: (request: RecordedLineRequest, status: number) => void } = {},
): Promise<FakeLineApi> {
  const channels = new Map<string, Map<string, FakeContent>>();
  /** Scripted answers by route, or by `content:<message id>` for one message's content. */
  const scripted = new Map<string, ScriptedLineAnswer[]>();
  const requests: RecordedLineRequest[] = [];
  const endpoints = new Map<string, string[]>();

  const routeOf = (method: string, pathname: string): FakeLineRoute | null => {
    if (method === 'GET' && contentPath.test(pathname)) return 'content';
    if (method === 'PUT' && pathname === endpointPath) return 'webhookEndpoint';
    return null;
  };
  const send = (response: http.ServerResponse, status: number, body: unknown) => {
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  };

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const url = new URL(request.url ?? '/', 'http://fake');
      const recorded: RecordedLineRequest = {
        at: Date.now(),
        method: request.method ?? '',
        path: url.pathname,
        headers: request.headers,
        body,
      };
      requests.push(recorded);
      response.on('close', () => options.onAnswered?.(recorded, response.statusCode));

      const route = routeOf(recorded.method, url.pathname);
      if (route === null) return send(response, 404, { message: 'Not found' });
      const contentOf = route === 'content' ? `content:${decodeURIComponent(contentPath.exec(url.pathname)![1]!)}` : null;
      const answer = (contentOf === null ? undefined : scripted.get(contentOf)?.shift()) ?? scripted.get(route)?.shift();
      if (answer) return send(response, answer.status, answer.body ?? {});
      const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
      const files = token === undefined ? undefined : channels.get(token);
      if (!files)
        return send(response, 401, {
          message: 'Authentication failed. Confirm that the access token in the authorization header is valid.',
        });

      if (route === 'content') {
        const messageId = decodeURIComponent(contentPath.exec(url.pathname)![1]!);
        const file = files.get(messageId);
        if (!file) return send(response, 404, { message: 'Not found' });
        response.writeHead(200, { 'content-type': file.contentType ?? 'image/jpeg', 'content-length': String(file.content.length) });
        return response.end(file.content);
      }
      let endpoint: unknown;
      try {
        endpoint = (JSON.parse(body) as { endpoint?: unknown }).endpoint;
      } catch {
        return send(response, 400, { message: 'The request body has 1 error(s)' });
      }
      if (typeof endpoint !== 'string' || !endpoint.startsWith('https://')) {
        return send(response, 400, {
          message: 'Invalid webhook endpoint URL',
          details: [{ property: 'endpoint', message: 'must be https' }],
        });
      }
      endpoints.set(token!, [...(endpoints.get(token!) ?? []), endpoint]);
      return send(response, 200, {});
    });
  });
  const port = await listen(server, options.port);
  const filesOf = (token: string) => channels.get(token) ?? channels.set(token, new Map()).get(token)!;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    endpoints,
    addChannel(token) {
      filesOf(token);
    },
    addContent(token, messageId, content) {
      filesOf(token).set(messageId, content);
    },
    failNext(route, answer, messageId) {
      const key = messageId === undefined ? route : `${route}:${messageId}`;
      scripted.set(key, [...(scripted.get(key) ?? []), answer]);
    },
    calls(route, messageId) {
      return requests.filter((request) => {
        if (routeOf(request.method, request.path) !== route) return false;
        return messageId === undefined || request.path === `/v2/bot/message/${encodeURIComponent(messageId)}/content`;
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}
