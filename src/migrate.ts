// `npm run migrate`: create the database when missing and apply pending migrations.
import { loadConfig } from './config.js';
import { connectionConfig, ensureDatabase } from './db/pool.js';
import { migrate } from './db/migrate.js';

const config = loadConfig();
const dbConfig = connectionConfig(config.databaseUrl);
await ensureDatabase(dbConfig);
const applied = await migrate(dbConfig);
console.log(applied.length > 0 ? `applied: ${applied.join(', ')}` : 'database schema is up to date');
