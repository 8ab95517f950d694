import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { configEnvNames } from '../../src/config.js';
import { projectRoot } from '../../src/paths.js';
import { temporalDynamicConfig } from '../../src/temporal/devserver.js';

interface Service {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  volumes?: string[];
  ports?: string[];
}

const compose = parse(fs.readFileSync(path.join(projectRoot, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const services = compose.services;

/** Connection variables the Temporal SDK's environment configuration reads (@temporalio/envconfig). */
const temporalEnvNames = [
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_API_KEY',
  'TEMPORAL_PROFILE',
  'TEMPORAL_CONFIG_FILE',
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_NAME',
];

describe('docker-compose.yml', () => {
  it('runs PostgreSQL, a Temporal server with its UI, and the app', () => {
    expect(Object.keys(services)).toEqual(
      expect.arrayContaining(['postgresql', 'temporal', 'temporal-ui', 'ingress', 'worker']),
    );
    expect(services.temporal?.image).toMatch(/^temporalio\/server:/);
    expect(services['temporal-ui']?.image).toMatch(/^temporalio\/ui:/);
    for (const service of Object.values(services)) expect(service.image ?? '').not.toContain('auto-setup');
  });

  it('orders start-up with health checks', () => {
    expect(services.postgresql?.healthcheck).toBeDefined();
    expect(services.temporal?.healthcheck).toBeDefined();
    expect(services.ingress?.healthcheck?.test.join(' ')).toContain('/readyz');
    for (const name of ['ingress', 'worker']) {
      expect(services[name]?.depends_on?.postgresql?.condition).toBe('service_healthy');
      const temporalDependency = Object.entries(services[name]?.depends_on ?? {}).find(([dep]) => dep.startsWith('temporal'));
      expect(temporalDependency?.[1].condition).toMatch(/service_healthy|service_completed_successfully/);
    }
  });

  it('builds the app image and starts the two entry points that exist in the sources', () => {
    for (const [name, entry] of [['ingress', 'ingress'], ['worker', 'worker']] as const) {
      expect(services[name]?.build).toBeDefined();
      const command = [services[name]?.command ?? []].flat().join(' ');
      expect(command).toContain(`dist/src/${entry}.js`);
      expect(fs.existsSync(path.join(projectRoot, 'src', `${entry}.ts`))).toBe(true);
    }
    expect(fs.existsSync(path.join(projectRoot, 'Dockerfile'))).toBe(true);
  });

  it('gives its Temporal server the dynamic configuration the embedded dev server runs with', () => {
    const mounts = (services.temporal?.volumes ?? []).map((volume) => volume.split(':'));
    const mounted = mounts.find(([, target]) => target === '/etc/temporal/config/dynamicconfig/docker.yaml');
    expect(mounted).toBeDefined();
    const file = parse(fs.readFileSync(path.join(projectRoot, mounted![0]!), 'utf8')) as Record<string, Array<{ value: unknown }>>;
    const values = Object.fromEntries(Object.entries(file).map(([key, [setting]]) => [key, setting?.value]));
    expect(values).toEqual(temporalDynamicConfig);
    expect(values['system.enableActivityEagerExecution']).toBe(true);
  });

  it('sets only variables the app reads', () => {
    const known = new Set([...configEnvNames, ...temporalEnvNames]);
    for (const name of ['ingress', 'worker']) {
      const variables = Object.keys(services[name]?.environment ?? {});
      expect(variables.length).toBeGreaterThan(5);
      expect(variables.filter((variable) => !known.has(variable))).toEqual([]);
    }
  });

  it('publishes only the ingress beyond this host, and holds no API token of its own', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const port of service.ports ?? []) {
        if (name === 'ingress') expect(port).toBe('3000:3000');
        else expect(port, `${name} publishes ${port}`).toMatch(/^127\.0\.0\.1:/);
      }
    }
    expect(services.ingress?.environment?.API_TOKENS).toBe('${API_TOKENS:-}');
    expect(services.worker?.environment?.API_TOKENS).toBeUndefined();
    // Without API_TOKENS the ingress generates its admin token in DATA_DIR: a volume, so it survives a new container.
    const dataDir = services.ingress?.environment?.DATA_DIR;
    expect(services.ingress?.volumes?.some((volume) => volume.endsWith(`:${dataDir}`))).toBe(true);
  });

});
