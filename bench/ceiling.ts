// The ceiling of the ingest benchmark: a bare Fastify endpoint that verifies the same HMAC
// (src/common/signature.ts), parses the event into the same child (src/platforms/unifyport/parse.ts) and commits the same
// rows with the project's own SQL, one transaction per request (ingestChild of src/db/ingest.ts: one
// statement writing the event, album, child, attachments and outbox row). Nothing else: no group commit,
// no NOTIFY (there is no dispatcher to wake: its database of its own loses the outbox trigger), no
// schemas, no hooks, no logging, no metrics, no Temporal.
// Reads PORT, HOST, DATABASE_URL, WORKSPACE_SECRETS, SIGNATURE_TOLERANCE_S and MAX_BODY_BYTES like the app.
import Fastify from 'fastify';
import { loadConfig } from '../src/common/config.js';
import { ingestChild } from '../src/db/ingest.js';
import { connectionConfig, createPool } from '../src/db/pool.js';
import { parseEvent } from '../src/platforms/unifyport/parse.js';
import { verifySignature } from '../src/common/signature.js';

/** The size of the pool src/process/start.ts gives the app, so both sides have the same connections. */
export const ceilingPoolSize = 20;

const config = loadConfig();
// The ceiling sits idle while the app's steps run and settle. With the pool's default idle timeout it would
// reconnect at the start of each step, and its tail latency would measure the reconnecting: its connections
// stay open.
const pool = createPool(connectionConfig(config.databaseUrl), {
  max: ceilingPoolSize,
  applicationName: 'albumflow-bench-ceiling',
  idleTimeoutMillis: 0,
});
await pool.query('DROP TRIGGER IF EXISTS outbox_notify ON outbox');
const app = Fastify({ bodyLimit: config.maxBodyBytes });
app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

app.post<{ Params: { workspace: string }; Body: Buffer }>('/webhooks/unifyport/:workspace', async (request, reply) => {
  const { workspace } = request.params;
  const secrets = config.workspaceSecrets.get(workspace);
  if (!secrets) return reply.code(404).send({ error: { code: 'unknown_workspace', message: workspace } });
  const verdict = verifySignature({
    secrets,
    timestamp: request.headers['x-unifyport-timestamp'] as string | undefined,
    signature: request.headers['x-unifyport-signature'] as string | undefined,
    body: request.body,
    toleranceS: config.signatureToleranceS,
  });
  if (!verdict.ok) return reply.code(401).send({ error: { code: verdict.reason, message: verdict.reason } });
  const event = parseEvent(workspace, request.body);
  if (event.kind !== 'child') return reply.code(400).send({ error: { code: 'not_a_child', message: event.kind } });
  const stored = await ingestChild(pool, {
    source: 'unifyport',
    eventId: event.eventId,
    type: event.type,
    raw: request.body.toString('utf8'),
    child: event.child,
  });
  return reply.code(202).send({ status: 'accepted', ...stored });
});

await app.listen({ port: config.port, host: config.host });
const address = app.server.address();
process.stdout.write(`ceiling listening on http://${config.host}:${typeof address === 'object' && address ? address.port : config.port}\n`);

const shutdown = () => {
  void app
    .close()
    .then(() => pool.end())
    .finally(() => process.exit(0));
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
