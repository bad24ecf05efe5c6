//! The cursor every live read answers with (`Stream-Cursor`, SSE's `streamCursor`).
//!
//! A CDN in front of the server may collapse many long-polls for the same offset into
//! one request and cache its answer. If the answer is an empty "nothing new" and the
//! cache key never changes, readers could be fed that cached answer forever. The cursor
//! breaks such loops: clients echo the last cursor they got in the next request's URL,
//! and the server answers with the number of the current 20-second interval since
//! 2024-10-09 00:00 UTC, so the key changes as time passes. A client that sends a cursor
//! at or past the current interval (it was answered within this interval already) gets
//! one pushed further by a random 1 to 3,600 seconds' worth of intervals, so cursors
//! never repeat and never go back.

/// The length of one cursor interval.
pub const INTERVAL_MS: u64 = 20_000;
/// 2024-10-09T00:00:00Z, where interval 0 starts.
pub const EPOCH_UNIX_MS: u64 = 1_728_432_000_000;
/// The jitter added to a cursor that caught up with the clock: 1 to this many seconds.
pub const JITTER_SECONDS_MAX: u64 = 3600;

/// The interval `now_unix_ms` falls in.
pub fn interval_at(now_unix_ms: u64) -> u64 {
    now_unix_ms.saturating_sub(EPOCH_UNIX_MS) / INTERVAL_MS
}

/// The cursor to answer with at `now_unix_ms`, given the client's `cursor` parameter
/// and a random draw (any `u64`) for the jitter.
pub fn respond(now_unix_ms: u64, client: Option<&str>, random: u64) -> u64 {
    let current = interval_at(now_unix_ms);
    match client.and_then(|text| text.parse::<u64>().ok()) {
        Some(client) if client >= current => {
            let jitter_seconds = 1 + random % JITTER_SECONDS_MAX;
            let jitter_intervals = (jitter_seconds * 1000).div_ceil(INTERVAL_MS).max(1);
            client.saturating_add(jitter_intervals)
        }
        _ => current,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_is_the_interval_unless_the_client_caught_up() {
        let now = EPOCH_UNIX_MS + 1000 * INTERVAL_MS + 5;
        assert_eq!(respond(now, None, 7), 1000);
        assert_eq!(respond(now, Some("999"), 7), 1000);
        assert_eq!(respond(now, Some("not a number"), 7), 1000);
        // Caught up: pushed by 1 to 3600 seconds, rounded up to whole intervals.
        assert_eq!(respond(now, Some("1000"), 0), 1001);
        assert_eq!(respond(now, Some("1000"), 3599), 1000 + 180);
        assert_eq!(respond(now, Some("5000"), 40), 5000 + 3);
        assert!((0..100).all(|draw| respond(now, Some("1000"), draw) > 1000));
        assert_eq!(interval_at(0), 0);
    }
}
