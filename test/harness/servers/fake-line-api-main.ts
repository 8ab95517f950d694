// `npm run fake-line-api [-- --port N] [body.json …]`: the tests' FAKE LINE Messaging API, started on its
// own so that a person can try albumflow's LINE route without LINE (docs/line.md, "Try it without
// LINE"). It is test tooling: it knows one made-up channel and the images of the webhook bodies it is
// given (the example image set by default), serves a real JPEG for each, and never talks to LINE.

import { cannotListen, closeOnSignals, fakeApiCommand, shellQuote } from './fake-api-command.js';
import { startFakeLineApi } from './fake-line-api.js';
import { demoChannel, demoLineChannels, exampleImageSetFile, serveImages } from './fake-line-api-demo.js';

const usage = `npm run fake-line-api [-- --port N] [body.json …]

Starts a FAKE LINE Messaging API (message content, webhook endpoint) on 127.0.0.1 for the channel
LINE_CHANNELS["${demoChannel.workspace}"]["${demoChannel.name}"], serving a JPEG for each image of the webhook bodies in
the files given, each holding a body or a list (default: examples/line-image-set.json). --port 0 picks a
free port (default 8082).`;

const { port, files, relative } = fakeApiCommand({ name: 'fake-line-api', usage, defaultPort: 8082, exampleFile: exampleImageSetFile });

const api = await startFakeLineApi({
  port,
  onAnswered: (request, status) => console.log(`${new Date(request.at).toISOString()}  ${request.method} ${request.path} → ${status}`),
}).catch(cannotListen('fake-line-api', port));
const images = await serveImages(api, files);

console.log(
  [
    `A FAKE LINE Messaging API (albumflow's test tooling; it never talks to LINE) is listening on ${api.url}`,
    `It knows one channel and serves ${images.length} images to it:`,
    ...images.map((image) => `  message ${image.messageId}  JPEG, ${image.content.length} bytes  (${relative(image.file)})`),
    '',
    'Run albumflow against it, and keep LINE_CHANNELS for the CLI (it signs with the channel secret):',
    `  export LINE_CHANNELS=${shellQuote(demoLineChannels())}`,
    `  LINE_API_ROOT=${api.url} LINE_DATA_API_ROOT=${api.url} npm start`,
    '',
    'Then send the webhook bodies (one request each, in order, as LINE does):',
    ...files.map(
      (file) => `  npx albumflow send --line ${relative(file)} --workspace ${demoChannel.workspace} --channel ${demoChannel.name} --now`,
    ),
    '',
    'Requests; Ctrl-C stops it:',
  ].join('\n'),
);

closeOnSignals(api);
