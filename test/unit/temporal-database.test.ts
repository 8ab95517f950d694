import { describe, expect, it } from 'vitest';
import { temporalDatabase } from '../../tools/cluster/database.js';

describe("Temporal's databases beside albumflow's", () => {
  it('sit on the server of DATABASE_URL, named after its database, with its user and password', () => {
    expect(temporalDatabase('postgresql://app:s%40cret@db.internal:5433/albums')).toEqual({
      host: 'db.internal',
      port: 5433,
      user: 'app',
      password: 's@cret',
      names: { store: 'albums_temporal', visibility: 'albums_temporal_visibility' },
      tls: { enabled: false, verifyHost: false, caFile: undefined },
    });
  });

  it('take TLS from sslmode, verifying the host only for verify-full', () => {
    expect(temporalDatabase('postgresql://app@db/albums?sslmode=require').tls).toEqual({
      enabled: true,
      verifyHost: false,
      caFile: undefined,
    });
    expect(temporalDatabase('postgresql://app@db/albums?sslmode=verify-full').tls).toEqual({
      enabled: true,
      verifyHost: true,
      caFile: undefined,
    });
    expect(temporalDatabase('postgresql://app@db/albums?sslmode=disable').tls.enabled).toBe(false);
  });

  it('refuse a socket directory, which the server cannot connect to, and no URL at all', () => {
    expect(() => temporalDatabase('postgresql:///albums?host=/var/run/postgresql')).toThrow(/connects to PostgreSQL over TCP only/);
    expect(() => temporalDatabase('')).toThrow(/DATABASE_URL is not set/);
  });
});
