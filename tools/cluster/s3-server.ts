// `npm run s3:install`: the S3-compatible server of the tests and of docker-compose (versions.ts), from
// the tool cache, built there with `go install` when it is not there yet; prints its path.
import { pathToFileURL } from 'node:url';
import { locateTool } from './builds.js';
import { s3ServerTool } from './versions.js';

/** The Versity S3 Gateway's binary in the tool cache (built when missing). */
export function locateS3Server(options: { env?: NodeJS.ProcessEnv; log?: (message: string) => void } = {}): Promise<string> {
  return locateTool(s3ServerTool, options);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  locateS3Server({ log: (m) => console.error(m) })
    .then((file) => console.log(file))
    .catch((err: Error) => {
      console.error(err.message);
      process.exitCode = 1;
    });
}
