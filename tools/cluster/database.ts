import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { connectionConfig } from '../../src/db/pool.js';

const run = promisify(execFile);

/** Where the Temporal server keeps its state: two databases on one PostgreSQL server. */
export interface TemporalDatabase {
  host: string;
  port: number;
  user: string;
  password: string;
  /** Workflow state (histories, mutable state, task queues) and visibility (the workflow list and its search attributes). */
  names: { store: string; visibility: string };
  tls: { enabled: boolean; verifyHost: boolean; caFile: string | undefined };
}

/**
 * Temporal's databases beside albumflow's: on the PostgreSQL server of `databaseUrl`, named after
 * albumflow's database (`albumflow` → `albumflow_temporal`, `albumflow_temporal_visibility`), with its
 * user, password and `sslmode`.
 */
export function temporalDatabase(databaseUrl: string): TemporalDatabase {
  const config = connectionConfig(databaseUrl);
  const host = config.host ?? '127.0.0.1';
  if (host.startsWith('/')) {
    throw new Error(
      `DATABASE_URL names the socket directory ${host}; the Temporal server connects to PostgreSQL over TCP only: ` +
        'give the URL a host (postgresql://user@127.0.0.1:5432/albumflow).',
    );
  }
  const params = new URL(databaseUrl).searchParams;
  const sslmode = params.get('sslmode') ?? 'disable';
  const database = config.database ?? 'albumflow';
  return {
    host,
    port: config.port ?? 5432,
    user: config.user ?? '',
    password: typeof config.password === 'string' ? config.password : '',
    names: { store: `${database}_temporal`, visibility: `${database}_temporal_visibility` },
    tls: {
      enabled: ['require', 'verify-ca', 'verify-full'].includes(sslmode),
      verifyHost: sslmode === 'verify-full',
      caFile: params.get('sslrootcert') ?? undefined,
    },
  };
}

/** The schema of each database in the SQL tool's embedded schemas. */
const schemaNames = { store: 'postgresql/v12/temporal', visibility: 'postgresql/v12/visibility' } as const;

/**
 * Creates both databases when missing and brings their schemas to the server's version with
 * temporal-sql-tool; every step is a no-op on a database that is already there and current.
 */
export async function setUpSchemas(sqlTool: string, db: TemporalDatabase, log: (message: string) => void = () => undefined): Promise<void> {
  for (const kind of ['store', 'visibility'] as const) {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      SQL_PLUGIN: 'postgres12',
      SQL_HOST: db.host,
      SQL_PORT: String(db.port),
      SQL_USER: db.user,
      SQL_PASSWORD: db.password,
      SQL_DATABASE: db.names[kind],
      ...(db.tls.enabled
        ? {
            SQL_TLS: 'true',
            SQL_TLS_DISABLE_HOST_VERIFICATION: String(!db.tls.verifyHost),
            ...(db.tls.caFile ? { SQL_TLS_CA_FILE: db.tls.caFile } : {}),
          }
        : {}),
    };
    for (const args of [['create-database'], ['setup-schema', '-v', '0.0'], ['update-schema', '--schema-name', schemaNames[kind]]]) {
      try {
        await run(sqlTool, args, { env, encoding: 'utf8' });
      } catch (err) {
        const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
        const lines = `${stdout}${stderr}`.trim().split('\n');
        const errors = lines.filter((line) => /error|fatal/i.test(line));
        const output = (errors.length > 0 ? errors : lines).slice(-5).join('\n');
        const shown = db.password ? output.replaceAll(db.password, '***') : output;
        throw new Error(`temporal-sql-tool ${args.join(' ')} on ${db.host}:${db.port}/${db.names[kind]} failed:\n${shown}`);
      }
    }
    log(`Temporal ${kind === 'store' ? 'state' : 'visibility'} database ${db.names[kind]} is at the server's schema`);
  }
}
