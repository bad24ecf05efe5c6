//! Reading a crash test's streams back after a restart and checking them against what
//! was acknowledged: every message, every request once and in order, every offset an
//! acknowledgement named.

use std::collections::HashMap;

use http::StatusCode;
use walab_core::rng::Rng;

use super::{message_of, Ledger, Names, Producer, ReadMessage, Stop, OFFSET_READS_PER_CHECK};
use crate::cmd::protocol_client::{header, Client, START_OFFSET};

/// A stream as read back: its messages in order, and the offsets the reads named, each
/// with the number of messages before it.
#[derive(Default, Debug)]
pub(super) struct ReadBack {
    pub(super) messages: Vec<ReadMessage>,
    pub(super) boundaries: Vec<(usize, String)>,
}

/// Reads stream `name` from its start to its tail, a chunk at a time, each from the
/// offset the last one named.
pub(super) async fn read_all(client: &mut Client, name: &str) -> Result<ReadBack, Stop> {
    let mut read = ReadBack::default();
    let mut offset = START_OFFSET.to_string();
    loop {
        let answer = client.read(name, &offset).await.map_err(Stop::Harness)?;
        if answer.status != StatusCode::OK {
            return Err(Stop::Broken(format!("stream {name}: GET ?offset={offset} answered {}, expected its messages", answer.describe())));
        }
        let messages: Vec<ReadMessage> = serde_json::from_slice(&answer.body).map_err(|error| {
            Stop::Broken(format!(
                "stream {name}: GET ?offset={offset}: not a JSON array of this test's messages ({error}): {}",
                String::from_utf8_lossy(&answer.body[..answer.body.len().min(200)])
            ))
        })?;
        let Some(next) = answer.next_offset().map(str::to_string) else {
            return Err(Stop::Broken(format!("stream {name}: GET ?offset={offset} answered without {}", header::STREAM_NEXT_OFFSET)));
        };
        let up_to_date = answer.says(header::STREAM_UP_TO_DATE);
        if messages.is_empty() && !up_to_date {
            return Err(Stop::Broken(format!("stream {name}: GET ?offset={offset} answered no message, yet not up to date")));
        }
        if !messages.is_empty() && next <= offset && offset != START_OFFSET {
            return Err(Stop::Broken(format!("stream {name}: GET ?offset={offset} gave messages and a next offset {next} that does not sort after it")));
        }
        read.messages.extend(messages);
        read.boundaries.push((read.messages.len(), next.clone()));
        if up_to_date {
            return Ok(read);
        }
        offset = next;
    }
}

/// Checks a stream as read back against the ledger: every message one of this test's
/// producers' on this stream, with the bytes it sent; each request's messages together
/// and in order, each request once, each producer's requests in seq order; every
/// acknowledged request there and nothing unacknowledged; and every offset an
/// acknowledgement named where its request ends (at a read's boundary exactly, and in
/// the order of the stream). Gives where each request ends, in messages from the start.
pub(super) fn check_read(names: &Names, producers: &[Producer], stream: usize, ledger: &Ledger, read: &ReadBack, record_bytes: usize) -> Result<HashMap<(usize, u64), usize>, String> {
    let name = &names.streams[stream];
    let mut ends: HashMap<(usize, u64), usize> = HashMap::new();
    let mut last_seq: HashMap<usize, u64> = HashMap::new();
    let mut at = 0;
    while at < read.messages.len() {
        let first = &read.messages[at];
        let producer = match names.by_id.get(&first.p) {
            Some(&producer) if producers[producer].stream == stream => producer,
            _ => return Err(format!("stream {name} message {at}: from producer {:?}, not one of this stream's", first.p)),
        };
        let (id, seq, batch) = (&names.producers[producer], first.s, producers[producer].batch);
        for i in 0..batch {
            let expected = message_of(id, seq, i, record_bytes);
            let found = read.messages.get(at + i as usize);
            let right = found.is_some_and(|m| serde_json::from_str::<ReadMessage>(&expected).is_ok_and(|e| e == *m));
            if !right {
                return Err(format!(
                    "stream {name} message {}: producer {id} seq {seq}'s message {i} of {batch} expected, found {}",
                    at + i as usize,
                    found.map_or("the end of the stream".to_string(), |m| format!("producer {} seq {} message {}", m.p, m.s, m.i))
                ));
            }
        }
        at += batch as usize;
        if let Some(earlier) = ends.insert((producer, seq), at) {
            return Err(format!("stream {name}: producer {id} seq {seq} is there twice, ending at message {earlier} and at {at}"));
        }
        if let Some(&before) = last_seq.get(&producer) {
            if before >= seq {
                return Err(format!("stream {name} message {}: producer {id} seq {seq} after its seq {before}", at - batch as usize));
            }
        }
        last_seq.insert(producer, seq);
        if !ledger.requests.contains_key(&(producer, seq)) {
            return Err(format!("stream {name} message {}: holds producer {id} seq {seq}, which no answer acknowledged (not even a retry)", at - batch as usize));
        }
    }
    // Nothing acknowledged missing.
    let mut named: Vec<(usize, &str, usize, u64)> = Vec::new();
    for (&(producer, seq), offset) in &ledger.requests {
        if producers[producer].stream != stream {
            continue;
        }
        let Some(&end) = ends.get(&(producer, seq)) else {
            return Err(format!(
                "stream {name}: producer {} seq {seq} was acknowledged{}, but the stream does not hold it",
                names.producers[producer],
                offset.as_ref().map_or(String::new(), |offset| format!(" at offset {offset}"))
            ));
        };
        if let Some(offset) = offset {
            named.push((end, offset, producer, seq));
        }
    }
    // The named offsets: at the reads' boundaries exactly, and in the stream's order.
    let boundaries: HashMap<usize, &str> = read.boundaries.iter().map(|(at, offset)| (*at, offset.as_str())).collect();
    named.sort();
    for pair in named.windows(2) {
        let ((end, offset, producer, seq), (next_end, next_offset, ..)) = (pair[0], pair[1]);
        if offset >= next_offset {
            return Err(format!(
                "stream {name}: producer {} seq {seq} ends at message {end} and was acknowledged at offset {offset}, which does not sort before offset {next_offset} named for the request ending at message {next_end}",
                names.producers[producer]
            ));
        }
    }
    for &(end, offset, producer, seq) in &named {
        if let Some(&boundary) = boundaries.get(&end) {
            if boundary != offset {
                return Err(format!(
                    "stream {name}: producer {} seq {seq} was acknowledged at offset {offset}, but the read that ended with it named offset {boundary}",
                    names.producers[producer]
                ));
            }
        }
    }
    if let (Some(&(end, offset, producer, seq)), Some((_, tail))) = (named.last(), read.boundaries.last()) {
        if offset > tail.as_str() {
            return Err(format!(
                "stream {name}: producer {} seq {seq} (ending at message {end}) was acknowledged at offset {offset}, past the stream's tail {tail}",
                names.producers[producer]
            ));
        }
    }
    Ok(ends)
}

/// Reads the stream from offsets that acknowledgements named (a few, chosen at random)
/// and checks that each read starts right after its request: with the request that
/// follows it in the stream, or empty at the tail.
pub(super) async fn check_offsets(
    client: &mut Client,
    names: &Names,
    stream: usize,
    ledger: &Ledger,
    read: &ReadBack,
    ends: &HashMap<(usize, u64), usize>,
    rng: &mut Rng,
) -> Result<u64, Stop> {
    let name = &names.streams[stream];
    let mut named: Vec<(&String, usize, usize, u64)> = ledger.offsets[stream]
        .iter()
        .filter_map(|(offset, &(producer, seq))| ends.get(&(producer, seq)).map(|&end| (offset, end, producer, seq)))
        .collect();
    named.sort();
    let mut reads = 0;
    for _ in 0..OFFSET_READS_PER_CHECK.min(named.len()) {
        let (offset, end, producer, seq) = named[rng.below(named.len() as u64) as usize];
        let answer = client.read(name, offset).await.map_err(Stop::Harness)?;
        let first = serde_json::from_slice::<Vec<ReadMessage>>(&answer.body).ok().filter(|_| answer.status == StatusCode::OK).map(|m| m.into_iter().next());
        let expected = read.messages.get(end);
        let right = match (&first, expected) {
            (Some(Some(found)), Some(expected)) => found == expected,
            (Some(None), None) => answer.says(header::STREAM_UP_TO_DATE),
            _ => false,
        };
        if !right {
            return Err(Stop::Broken(format!(
                "stream {name}: a read from offset {offset}, where producer {} seq {seq} was acknowledged to end, answered {}; expected {}",
                names.producers[producer],
                match &first {
                    Some(Some(found)) => format!("producer {} seq {} message {} first", found.p, found.s, found.i),
                    Some(None) => "no message".to_string(),
                    None => answer.describe(),
                },
                expected.map_or("no message (the tail)".to_string(), |m| format!("producer {} seq {} message {} first", m.p, m.s, m.i))
            )));
        }
        reads += 1;
    }
    Ok(reads)
}
