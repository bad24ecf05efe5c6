// The Durable Streams reference server (npm @durable-streams/server) in file mode, for
// compare/protocol/run: `node ref-server.mjs DATA_DIR` listens on 127.0.0.1 at a free
// port and prints `ref-server: listening on http://127.0.0.1:PORT` once it accepts
// connections. With a data directory the server keeps streams in LMDB and log files and
// syncs on every append; it serves until it gets SIGTERM or SIGINT.
import { DurableStreamTestServer } from '@durable-streams/server'

const dataDir = process.argv[2]
if (!dataDir) {
  console.error('ref-server: usage: node ref-server.mjs DATA_DIR')
  process.exit(2)
}
// compression off: the load generator sends and reads small bodies, as for the others.
const server = new DurableStreamTestServer({ port: 0, host: '127.0.0.1', dataDir, compression: false })
const url = await server.start()
console.error(`ref-server: listening on ${url}`)
const stop = async () => {
  await server.stop()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
