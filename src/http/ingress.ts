import type { FastifyRequest } from 'fastify';
import type { IngestBatcher } from '../db/ingest-batcher.js';
import type { HttpError } from './errors.js';

/** What the webhook routes share: one group commit, the outcome each request is counted under, and the 503 and 400 answers. */
export interface Ingress {
  batcher: IngestBatcher;
  /** Counts the request under this outcome (`accepted`, `ignored`, …) when it is answered. */
  count: (request: FastifyRequest, outcome: string) => void;
  /** An error answer, counted under its code. */
  refuse: (request: FastifyRequest, status: number, code: string, message: string, headers?: Record<string, string>) => HttpError;
  /** Runs `store`, answering 503 when the database cannot take it; a value PostgreSQL refuses (class 22) is quarantined as `unstorable`. */
  store: <T>(
    request: FastifyRequest,
    body: Buffer,
    workspace: string,
    unstorable: { code: string; message: string },
    store: () => Promise<T>,
  ) => Promise<T>;
  /** Stores a verified body that cannot become a child, byte for byte, and answers 400 with `code`. */
  quarantine: (request: FastifyRequest, body: Buffer, workspace: string, code: string, message: string, detail?: string) => Promise<never>;
}
