// The Durable Streams Node reference server (@durable-streams/server) in file mode, for
// comparing walab serve with it: `node reference-server.mjs DATA_DIR [PORT]` prints
// `reference server: listening on http://127.0.0.1:PORT` on stderr once it accepts
// connections, and stops on SIGTERM or SIGINT.
import { DurableStreamTestServer } from '@durable-streams/server';

const [dataDir, port = '0'] = process.argv.slice(2);
if (!dataDir) {
  console.error('usage: node reference-server.mjs DATA_DIR [PORT]');
  process.exit(2);
}
const server = new DurableStreamTestServer({ port: Number(port), host: '127.0.0.1', dataDir });
const url = await server.start();
console.error(`reference server: listening on ${url}`);
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, async () => {
    await server.stop();
    process.exit(0);
  });
}
