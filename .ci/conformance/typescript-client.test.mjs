// The TypeScript client (@durable-streams/client) against the Durable Streams server at
// DS_BASE_URL: an IdempotentProducer writes MESSAGES JSON messages to a new stream while
// one SSE reader and one long-poll reader tail it from `now`. Both must see every message
// exactly once and in order, and a catch-up read afterwards must find the same.
//
// The producer is fire-and-forget: append() only queues, and a batch whose request
// failed is reported through onError and not sent again. So an onError here fails the
// test (naming the error) instead of being retried: a lost batch must not pass as the
// server's fault or be hidden by a resend.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DurableStream, IdempotentProducer, stream } from '@durable-streams/client';

const base = process.env.DS_BASE_URL;
const MESSAGES = Number(process.env.DS_MESSAGES ?? 100_000);
// A guard against a hang (a reader that never sees the last message), not a measurement.
const GIVE_UP_MS = Number(process.env.DS_GIVE_UP_MS ?? 600_000);
// How long the long-poll reader's first request gets to reach the server before the
// first append. Its `offset=now` is resolved when the server takes the request, and
// that request only answers once data arrives, so nothing tells the client it is
// parked; a reader that came too late misses the first messages and fails the test
// below (by name), it cannot pass wrongly.
const PARK_MS = 500;
// Small batches, so that the run is hundreds of POSTs with several in flight (they may
// arrive out of order, which the producer's seqs sort out) rather than a few large ones.
const BATCH_BYTES_MAX = 16 * 1024;
// Appends queued between two turns of the event loop: the producer's linger timer and
// its requests run while the messages are still being written.
const APPENDS_PER_TURN = 500;

/** Collects a reader's messages until it has `MESSAGES`, checking each as it comes. */
function tail(url, live) {
  const seen = [];
  let fail;
  let done;
  const finished = new Promise((resolve, reject) => {
    done = resolve;
    fail = reject;
  });
  // Awaited once the producer is done; until then a failure only waits there.
  finished.catch(() => {});
  let requested;
  const firstRequest = new Promise((resolve) => (requested = resolve));
  const fetchCounted = (input, init) => {
    requested();
    return fetch(input, init);
  };
  const session = stream({ url, offset: 'now', live, json: true, fetch: fetchCounted, warnOnHttp: false });
  session
    .then((response) => {
      response.subscribeJson((batch) => {
        for (const item of batch.items) {
          if (seen.length >= MESSAGES || item?.n !== seen.length) {
            fail(new Error(`${live} reader: message ${seen.length} expected, got ${JSON.stringify(item)} (after ${seen.length} in order)`));
            response.cancel();
            return;
          }
          seen.push(item.n);
        }
        if (seen.length === MESSAGES) {
          done(seen.length);
          response.cancel();
        }
      });
      response.closed.catch((error) => fail(new Error(`${live} reader: ${error}`)));
    })
    .catch((error) => fail(new Error(`${live} reader: ${error}`)));
  return { session, firstRequest, finished, seen };
}

test(`an IdempotentProducer's ${MESSAGES} JSON messages reach an SSE and a long-poll reader once each, in order`, async () => {
  assert.ok(base, 'DS_BASE_URL names the server');
  const url = `${base}/v1/stream/typescript-client-${process.pid}-${Date.now()}`;
  const handle = await DurableStream.create({ url, contentType: 'application/json', warnOnHttp: false });

  const sse = tail(url, 'sse');
  const longPoll = tail(url, 'long-poll');
  // SSE: the session opens once the server answered with the stream's headers, so
  // `now` is resolved. Long-poll: its first request has been sent, then a grace period.
  await sse.session;
  await longPoll.firstRequest;
  await new Promise((resolve) => setTimeout(resolve, PARK_MS));

  const errors = [];
  let posts = 0;
  const producer = new IdempotentProducer(handle, `typescript-client-${process.pid}`, {
    maxBatchBytes: BATCH_BYTES_MAX,
    onError: (error) => errors.push(error),
    fetch: (input, init) => {
      posts += 1;
      return fetch(input, init);
    },
  });
  for (let n = 0; n < MESSAGES; n++) {
    producer.append(JSON.stringify({ n, text: `message ${n}` }));
    if (n % APPENDS_PER_TURN === APPENDS_PER_TURN - 1) {
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  await producer.flush();
  assert.deepEqual(errors.map(String), [], 'the producer reported no failed batch');
  console.log(`${MESSAGES} messages in ${posts} POSTs`);

  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`readers after ${GIVE_UP_MS} ms: sse ${sse.seen.length}, long-poll ${longPoll.seen.length} of ${MESSAGES}`)),
      GIVE_UP_MS,
    );
  });
  try {
    const [sseCount, longPollCount] = await Promise.race([Promise.all([sse.finished, longPoll.finished]), timeout]);
    assert.equal(sseCount, MESSAGES);
    assert.equal(longPollCount, MESSAGES);
  } finally {
    clearTimeout(timer);
  }

  // What is stored, read from the start: the same messages once each, in order.
  const stored = await (await stream({ url, offset: '-1', live: false, json: true, warnOnHttp: false })).json();
  assert.equal(stored.length, MESSAGES, 'a catch-up read finds every message once');
  const outOfOrder = stored.findIndex((item, index) => item?.n !== index);
  assert.equal(outOfOrder, -1, `message ${outOfOrder} of the catch-up read is ${JSON.stringify(stored[outOfOrder])}`);
});
