use super::*;
use super::check::ReadBack;

const BYTES: usize = 60;

/// Two producers of two messages per request on one stream.
fn setup() -> (Names, Vec<Producer>) {
    let ids = ["p0".to_string(), "p1".to_string()];
    let names = Names {
        streams: vec!["s".to_string()],
        producers: ids.to_vec(),
        by_id: ids.iter().enumerate().map(|(index, id)| (id.clone(), index)).collect(),
    };
    let producers = (0..2)
        .map(|p| Producer { index: p, id: HeaderValue::from_str(&ids[p]).unwrap(), stream: 0, next_seq: 0, batch: 2, last: None, in_flight: None })
        .collect();
    (names, producers)
}

fn messages(requests: &[(&str, u64)]) -> Vec<ReadMessage> {
    let mut out = Vec::new();
    for &(id, seq) in requests {
        for i in 0..2 {
            out.push(serde_json::from_str(&message_of(id, seq, i, BYTES)).unwrap());
        }
    }
    out
}

/// p0 seq 0 ending at "o2", p1 seq 0 at "o4", p0 seq 1 acknowledged by a duplicate
/// only (no offset).
fn acked(names: &Names, producers: &[Producer]) -> Ledger {
    let mut ledger = Ledger::new(1);
    for (producer, seq, offset) in [(0, 0, Some("o2")), (1, 0, Some("o4")), (0, 1, None)] {
        assert!(ledger.ack(names, &producers[producer], seq, offset).is_ok());
    }
    ledger
}

fn right() -> ReadBack {
    ReadBack { messages: messages(&[("p0", 0), ("p1", 0), ("p0", 1)]), boundaries: vec![(4, "o4".to_string()), (6, "o6".to_string())] }
}

fn check(read: &ReadBack) -> Result<HashMap<(usize, u64), usize>, String> {
    let (names, producers) = setup();
    check_read(&names, &producers, 0, &acked(&names, &producers), read, BYTES)
}

#[test]
fn a_read_as_acknowledged_passes_and_each_broken_promise_is_named() {
    let ends = check(&right()).unwrap();
    assert_eq!(ends[&(0, 0)], 2);
    assert_eq!(ends[&(1, 0)], 4);
    assert_eq!(ends[&(0, 1)], 6);

    let lost = ReadBack { messages: messages(&[("p0", 0), ("p1", 0)]), boundaries: vec![(4, "o4".to_string())] };
    assert_eq!(check(&lost).unwrap_err(), "stream s: producer p0 seq 1 was acknowledged, but the stream does not hold it");
    let twice = ReadBack { messages: messages(&[("p0", 0), ("p1", 0), ("p0", 1), ("p0", 0)]), ..right() };
    assert!(check(&twice).unwrap_err().contains("producer p0 seq 0 is there twice"), "{:?}", check(&twice));
    let unacked = ReadBack { messages: messages(&[("p0", 0), ("p1", 0), ("p0", 1), ("p1", 1)]), ..right() };
    assert_eq!(check(&unacked).unwrap_err(), "stream s message 6: holds producer p1 seq 1, which no answer acknowledged (not even a retry)");
    let mut torn = right();
    torn.messages.remove(3);
    assert!(check(&torn).unwrap_err().contains("producer p1 seq 0's message 1 of 2 expected, found producer p0 seq 1 message 0"), "{:?}", check(&torn));
    let mut bytes = right();
    bytes.messages[1].v.push('x');
    assert!(check(&bytes).unwrap_err().contains("message 1: producer p0 seq 0's message 1 of 2 expected"), "{:?}", check(&bytes));
    let mut stranger = right();
    stranger.messages[0].p = "q".to_string();
    assert!(check(&stranger).unwrap_err().contains("from producer \"q\", not one of this stream's"));
    let reordered = ReadBack { messages: messages(&[("p0", 1), ("p1", 0), ("p0", 0)]), ..right() };
    assert!(check(&reordered).unwrap_err().contains("producer p0 seq 0 after its seq 1"), "{:?}", check(&reordered));
}

#[test]
fn an_acknowledged_offset_must_be_where_its_request_ends() {
    // The read's boundary after message 4 names another offset than p1 seq 0's.
    let moved = ReadBack { boundaries: vec![(4, "o5".to_string()), (6, "o6".to_string())], ..right() };
    assert_eq!(
        check(&moved).unwrap_err(),
        "stream s: producer p1 seq 0 was acknowledged at offset o4, but the read that ended with it named offset o5"
    );
    // Offsets that do not sort as the stream does.
    let (names, producers) = setup();
    let mut ledger = Ledger::new(1);
    for (producer, seq, offset) in [(0, 0, Some("o5")), (1, 0, Some("o4")), (0, 1, None)] {
        assert!(ledger.ack(&names, &producers[producer], seq, offset).is_ok());
    }
    let unsorted = ReadBack { boundaries: vec![(6, "o6".to_string())], ..right() };
    let error = check_read(&names, &producers, 0, &ledger, &unsorted, BYTES).unwrap_err();
    assert!(error.contains("producer p0 seq 0 ends at message 2 and was acknowledged at offset o5, which does not sort before offset o4"), "{error}");
    // An offset past the tail.
    let short = ReadBack { boundaries: vec![(6, "o3".to_string())], ..right() };
    assert!(check(&short).unwrap_err().contains("past the stream's tail o3"), "{:?}", check(&short));
}

#[test]
fn an_acknowledgement_that_contradicts_an_earlier_one_is_a_broken_promise() {
    let (names, producers) = setup();
    let mut ledger = acked(&names, &producers);
    assert!(ledger.ack(&names, &producers[0], 0, Some("o2")).is_ok(), "the same acknowledgement again is no news");
    assert!(ledger.ack(&names, &producers[0], 0, None).is_ok(), "a duplicate names no offset");
    assert_eq!((ledger.len(), ledger.messages), (3, 6));
    let Err(Stop::Broken(copy)) = ledger.ack(&names, &producers[0], 0, Some("o9")) else { panic!("a second offset for p0 seq 0") };
    assert!(copy.contains("producer p0 seq 0 acknowledged at offset o9, but already at offset o2: a second copy"), "{copy}");
    let Err(Stop::Broken(taken)) = ledger.ack(&names, &producers[1], 7, Some("o2")) else { panic!("o2 twice") };
    assert!(taken.contains("offset o2: named for producer p1 seq 7, but already for producer p0 seq 0"), "{taken}");
    // A duplicate's acknowledgement gains its offset when a fresh answer names one.
    assert!(ledger.ack(&names, &producers[0], 1, Some("o6")).is_ok());
    assert_eq!(ledger.requests[&(0, 1)].as_deref(), Some("o6"));
}

#[test]
fn a_message_depends_on_its_producer_seq_and_place_and_has_the_asked_length() {
    let message = message_of("p", 3, 1, 80);
    assert_eq!(message.len(), 80, "{message}");
    assert!(message_of("a-long-producer", 12345, 0, 10).starts_with(r#"{"p":"a-long-producer","s":12345,"i":0,"v":""}"#));
    let parsed: ReadMessage = serde_json::from_str(&message).unwrap();
    assert_eq!((parsed.p.as_str(), parsed.s, parsed.i), ("p", 3, 1));
    assert_eq!(message_of("p", 3, 1, 80), message);
    assert_ne!(message_of("p", 3, 0, 80), message);
    assert_ne!(message_of("p", 4, 1, 80), message);
    assert_ne!(message_of("q", 3, 1, 80), message);
    assert_eq!(&request_body("p", 3, 1, 80)[..], message_of("p", 3, 0, 80).as_bytes());
    let batch: Vec<ReadMessage> = serde_json::from_slice(&request_body("p", 3, 3, 80)).unwrap();
    assert_eq!(batch.iter().map(|m| m.i).collect::<Vec<_>>(), vec![0, 1, 2]);
}
