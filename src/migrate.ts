// `npm run migrate`: create the database of DATABASE_URL when missing and apply pending migrations.
// (`npm start` applies them to its embedded PostgreSQL itself.)
import { loadConfig } from './common/config.js';
import { connectionConfig, ensureDatabase } from './db/pool.js';
import { migrate } from './db/migrate.js';

const config = loadConfig();
if (!config.databaseUrl) {
  process.stderr.write(
    'npm run migrate: DATABASE_URL is not set. `npm start` applies the migrations to its embedded PostgreSQL; set DATABASE_URL to migrate another server.\n',
  );
  process.exit(2);
}
const dbConfig = connectionConfig(config.databaseUrl);
await ensureDatabase(dbConfig);
const applied = await migrate(dbConfig);
console.log(applied.length > 0 ? `applied: ${applied.join(', ')}` : 'database schema is up to date');
