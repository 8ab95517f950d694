/**
 * The Temporal server and Web UI versions of albumflow's production topology, named once: the tool cache
 * of `npm run temporal:cluster` builds these modules, and docker-compose.yml runs these images
 * (test/unit/compose.test.ts keeps the two in step).
 */
export const temporalServerVersion = '1.32.1';
export const temporalUiVersion = '2.55.0';

export interface ClusterTool {
  /** `go install` argument. */
  module: string;
  /** Its file name in the tool cache; the version is part of it, so a new version is built beside the old. */
  binary: string;
  /** What it is, for messages. */
  what: string;
}

export const clusterTools = {
  server: {
    module: `go.temporal.io/server/cmd/server@v${temporalServerVersion}`,
    binary: `temporal-server-${temporalServerVersion}`,
    what: `the Temporal server ${temporalServerVersion}`,
  },
  sqlTool: {
    module: `go.temporal.io/server/cmd/tools/sql@v${temporalServerVersion}`,
    binary: `temporal-sql-tool-${temporalServerVersion}`,
    what: `temporal-sql-tool ${temporalServerVersion}`,
  },
  ui: {
    module: `github.com/temporalio/ui-server/v2/cmd/server@v${temporalUiVersion}`,
    binary: `temporal-ui-server-${temporalUiVersion}`,
    what: `the Temporal UI server ${temporalUiVersion}`,
  },
} as const satisfies Record<string, ClusterTool>;

/**
 * The S3-compatible server the tests and docker-compose run (the Versity S3 Gateway, its posix back
 * end): built into the tool cache by `npm run s3:install`, and compose's image of the same version.
 */
export const versitygwVersion = '1.8.0';

export const s3ServerTool: ClusterTool = {
  module: `github.com/versity/versitygw/cmd/versitygw@v${versitygwVersion}`,
  binary: `versitygw-${versitygwVersion}`,
  what: `the Versity S3 Gateway ${versitygwVersion}`,
};

/** The images of the same versions; admin-tools carries temporal-sql-tool and the `temporal` CLI. */
export const clusterImages = {
  server: `temporalio/server:${temporalServerVersion}`,
  adminTools: `temporalio/admin-tools:${temporalServerVersion}`,
  ui: `temporalio/ui:${temporalUiVersion}`,
  s3: `versity/versitygw:v${versitygwVersion}`,
} as const;
