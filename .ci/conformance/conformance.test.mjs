// The Durable Streams conformance suite against the server at CONFORMANCE_TEST_URL.
import { runConformanceTests } from '@durable-streams/server-conformance-tests';
runConformanceTests({ baseUrl: process.env.CONFORMANCE_TEST_URL });
