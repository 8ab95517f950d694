// A proxy in front of an S3-compatible server that refuses the deletes a test names, as a store does
// to credentials without s3:DeleteObject or to an object under an object lock: 403 AccessDenied, in S3's
// XML error body. Every other request goes through unchanged (its Host header too, so its signature
// holds). A test may have the deletes answered 503 instead, as by a store that is down, and conditional
// writes (`If-None-Match` on a PUT) answered 501 Not Implemented, as by a store without them.
import http from 'node:http';
import { listen } from './listen.js';

export interface RefusingS3 {
  /** AWS_ENDPOINT_URL_S3 for a client that goes through the proxy. */
  endpoint: string;
  /** Which DELETEs are refused, by their path (`/<bucket>/<key>`), and how (403 AccessDenied by default); none at first. */
  refuseDeletes(matches: ((path: string) => boolean) | null, answer?: 'denied' | 'unavailable'): void;
  /** The DELETE requests refused so far, by path. */
  readonly refused: string[];
  /** Answers every PUT with an If-None-Match header 501 NotImplemented (or, with false, passes them on). */
  refuseConditionalWrites(refuse: boolean): void;
  /** Every request so far, as `<method> <path>` (a PUT with If-None-Match as `PUT? <path>`). */
  readonly requests: string[];
  close(): Promise<void>;
}

const answers = {
  denied: { status: 403, code: 'AccessDenied', message: 'Access Denied' },
  unavailable: { status: 503, code: 'ServiceUnavailable', message: 'Please reduce your request rate.' },
  notImplemented: { status: 501, code: 'NotImplemented', message: 'A header you provided implies functionality that is not implemented.' },
};

const errorBody = ({ code, message }: { code: string; message: string }, path: string) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message>` +
  `<Resource>${path}</Resource><RequestId>refusing-s3</RequestId></Error>`;

export async function startRefusingS3(upstream: string): Promise<RefusingS3> {
  const target = new URL(upstream);
  let refuses: ((path: string) => boolean) | null = null;
  let answer = answers.denied;
  const refused: string[] = [];
  const requests: string[] = [];
  let refusesConditions = false;
  const server = http.createServer((req, res) => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]!);
    const conditional = req.method === 'PUT' && req.headers['if-none-match'] !== undefined;
    requests.push(`${req.method}${conditional ? '?' : ''} ${path}`);
    const refuseWith = (refusal: { status: number; code: string; message: string }) => {
      req.resume();
      req.once('end', () => {
        res.writeHead(refusal.status, { 'content-type': 'application/xml' });
        res.end(errorBody(refusal, path));
      });
    };
    if (req.method === 'DELETE' && refuses?.(path)) {
      refused.push(path);
      refuseWith(answer);
      return;
    }
    if (conditional && refusesConditions) {
      refuseWith(answers.notImplemented);
      return;
    }
    const forwarded = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.once('error', () => res.destroy());
    req.pipe(forwarded);
  });
  const port = await listen(server);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    refuseDeletes(matches, how = 'denied') {
      refuses = matches;
      answer = answers[how];
    },
    refused,
    refuseConditionalWrites(refuse) {
      refusesConditions = refuse;
    },
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
