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

/** The images of the same versions; admin-tools carries temporal-sql-tool and the `temporal` CLI. */
export const clusterImages = {
  server: `temporalio/server:${temporalServerVersion}`,
  adminTools: `temporalio/admin-tools:${temporalServerVersion}`,
  ui: `temporalio/ui:${temporalUiVersion}`,
} as const;
