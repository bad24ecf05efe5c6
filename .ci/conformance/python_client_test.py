"""The Python client (PyPI durable-streams) against the Durable Streams server at
DS_BASE_URL: it appends to a JSON stream and a byte stream and reads both back, from the
start and from an offset it was given, as a catch-up read and as a long-poll.

Run with the harness's venv: `venv/bin/python -m unittest python_client_test`.
"""

import os
import threading
import time
import unittest

from durable_streams import DurableStream, StreamNotFoundError, stream

BASE = os.environ.get("DS_BASE_URL", "")
MESSAGES = 200


def new_url(name: str) -> str:
    return f"{BASE}/v1/stream/python-client-{name}-{os.getpid()}-{time.time_ns()}"


class PythonClient(unittest.TestCase):
    def setUp(self) -> None:
        self.assertTrue(BASE, "DS_BASE_URL names the server")

    def test_json_messages_read_back_in_order_from_the_start_and_from_an_offset(self) -> None:
        url = new_url("json")
        with DurableStream.create(url, content_type="application/json") as handle:
            offsets = [handle.append({"n": n, "text": f"message {n}"}).next_offset for n in range(MESSAGES)]
            # Offsets are opaque but sort as the stream does.
            self.assertEqual(offsets, sorted(offsets))
            self.assertEqual(len(set(offsets)), MESSAGES, "each append ends at an offset of its own")
            self.assertEqual(handle.head().offset, offsets[-1], "HEAD's tail is the last append's")

            with handle.stream(offset="-1", live=False) as response:
                items = list(response.iter_json())
            self.assertEqual(items, [{"n": n, "text": f"message {n}"} for n in range(MESSAGES)])

            # From the offset the 100th append returned: the messages after it, only.
            with handle.stream(offset=offsets[99], live=False) as response:
                tail = [item["n"] for item in response.iter_json()]
            self.assertEqual(tail, list(range(100, MESSAGES)))

    def test_bytes_read_back_whole_and_a_long_poll_sees_the_next_append(self) -> None:
        url = new_url("bytes")
        chunks = [bytes([n % 251]) * (1 + n % 97) for n in range(MESSAGES)]
        with DurableStream.create(url, content_type="application/octet-stream") as handle:
            for chunk in chunks:
                end = handle.append(chunk).next_offset
            with handle.stream(offset="-1", live=False) as response:
                self.assertEqual(response.read_bytes(), b"".join(chunks))

            # A long-poll from the tail waits for the next append and returns only it.
            seen: list[bytes] = []

            def poll() -> None:
                with stream(url, offset=end, live="long-poll") as response:
                    for chunk in response:
                        if chunk:
                            seen.append(chunk)
                            break

            reader = threading.Thread(target=poll, daemon=True)
            reader.start()
            time.sleep(0.3)
            handle.append(b"after the tail")
            reader.join(timeout=60)
            self.assertFalse(reader.is_alive(), "the long-poll answered")
            self.assertEqual(seen, [b"after the tail"])

    def test_a_stream_that_is_not_there_is_named(self) -> None:
        with self.assertRaises(StreamNotFoundError):
            DurableStream.head_static(new_url("missing"))


if __name__ == "__main__":
    unittest.main()
