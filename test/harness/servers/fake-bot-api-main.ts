// `npm run fake-bot-api [-- --port N] [update.json …]`: the tests' FAKE Telegram Bot API, started on its
// own so that a person can try albumflow's Telegram route without Telegram (docs/telegram.md, "Try it
// without Telegram"). It is test tooling: it knows one made-up bot and the files of the Updates it is
// given (the example album by default), serves a real JPEG for each photo (an MP4 file for each video),
// and never talks to Telegram.

import { cannotListen, closeOnSignals, fakeApiCommand, shellQuote } from './fake-api-command.js';
import { startFakeBotApi } from './fake-bot-api.js';
import { demoBot, demoTelegramBots, exampleAlbumFile, servePhotos } from './fake-bot-api-demo.js';

const usage = `npm run fake-bot-api [-- --port N] [update.json …]

Starts a FAKE Telegram Bot API (getFile and the file route) on 127.0.0.1 for the bot ${demoBot.id} of
TELEGRAM_BOTS["${demoBot.workspace}"]["${demoBot.name}"], serving a JPEG for each photo (an MP4 file for each video)
of the Updates in the files given, each holding an Update or a list (default: examples/telegram-album.json). --port 0
picks a free port (default 8081).`;

const { port, files, relative } = fakeApiCommand({ name: 'fake-bot-api', usage, defaultPort: 8081, exampleFile: exampleAlbumFile });

/** The path as requested, the token's secret part left out. */
const shown = (requestPath: string) => requestPath.split(demoBot.token).join(`${demoBot.id}:…`);

const api = await startFakeBotApi({
  port,
  onAnswered: (request, status) => {
    const fileId = request.body.match(/"file_id":"([^"]+)"/)?.[1];
    console.log(
      `${new Date(request.at).toISOString()}  ${request.method} ${shown(request.path)}${fileId ? ` (${fileId.slice(0, 16)}…)` : ''} → ${status}`,
    );
  },
}).catch(cannotListen('fake-bot-api', port));
const photos = await servePhotos(api, demoBot.token, files);

console.log(
  [
    `A FAKE Telegram Bot API (albumflow's test tooling; it never talks to Telegram) is listening on ${api.url}`,
    `It knows one bot, ${demoBot.id}, and serves ${photos.length} ${photos.every((photo) => photo.format === 'JPEG') ? 'photos' : 'files'} to it:`,
    ...photos.map(
      (photo) =>
        `  ${photo.fileId.slice(0, 24)}…  ${photo.width}×${photo.height} ${photo.format}, ${photo.content.length} bytes  (update ${photo.updateId} of ${relative(photo.file)})`,
    ),
    '',
    'Run albumflow against it, and keep TELEGRAM_BOTS for the CLI (it signs with the secret token):',
    `  export TELEGRAM_BOTS=${shellQuote(demoTelegramBots())}`,
    `  TELEGRAM_API_ROOT=${api.url} npm start`,
    '',
    'Then send the Updates (one request each, in order, as Telegram does):',
    ...files.map(
      (file) => `  npx albumflow send --telegram ${relative(file)} --workspace ${demoBot.workspace} --bot ${demoBot.name} --now`,
    ),
    '',
    'Requests (the token shown without its secret part); Ctrl-C stops it:',
  ].join('\n'),
);

closeOnSignals(api);
