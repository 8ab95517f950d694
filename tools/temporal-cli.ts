// `npm run temporal:install`: locate the Temporal CLI the embedded dev server runs (building it into the
// tool cache when needed) and print its path.
import { installHint, locateTemporalCli } from '../src/embedded/temporal-cli.js';

locateTemporalCli({ log: (m) => console.error(m) })
  .then((cli) => {
    if (cli.kind === 'binary') console.log(cli.path);
    else {
      console.error(`No Temporal CLI binary could be found or built. ${installHint()}`);
      process.exitCode = 1;
    }
  })
  .catch((err: Error) => {
    console.error(err.message);
    process.exitCode = 1;
  });
