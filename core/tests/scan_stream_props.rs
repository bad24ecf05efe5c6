//! The streaming scan against the collecting one, over logs of several segments that a
//! crash or a bad disk has damaged: fed one segment at a time from buffers of their own,
//! with its checks dropped, the streaming scan ([`TinyScanner`], [`LogScanner`]) hands
//! over exactly the records the collecting scan ([`scan_tiny`], [`scan_log`]) returns,
//! in the same order, and stops at the same place with the same next seq; with its
//! checks kept it makes the same checks. And what it hands over was written, in order:
//! everything, when nothing was damaged.

use proptest::prelude::*;
use walab_core::codec::leveldb::{scan_log, HeaderKind, LogFormat, LogScanner, LogSegment, LogWriter};
use walab_core::codec::tiny;
use walab_core::codec::write_batch::{BatchOp, WriteBatch};
use walab_core::codec::Op;
use walab_core::scan::{scan_tiny, CheckLog, ScanCheck, StopReason, TinyScanner};

/// What happens to the written segments.
#[derive(Clone, Debug)]
enum Damage {
    None,
    /// The segment at this index (modulo their count) is cut at this byte (modulo its
    /// length): a torn write.
    Cut(usize, usize),
    /// One bit of one byte flipped: a bad disk.
    Flip(usize, usize, u8),
    /// A run of bytes zeroed: a write that never reached the media.
    Zero(usize, usize, usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        Just(Damage::None),
        (any::<usize>(), any::<usize>()).prop_map(|(s, at)| Damage::Cut(s, at)),
        (any::<usize>(), any::<usize>(), 0u8..8).prop_map(|(s, at, bit)| Damage::Flip(s, at, bit)),
        (any::<usize>(), any::<usize>(), 1usize..64).prop_map(|(s, at, n)| Damage::Zero(s, at, n)),
    ]
}

fn apply(segments: &mut [Vec<u8>], damage: &Damage) {
    let count = segments.len();
    if count == 0 {
        return;
    }
    match *damage {
        Damage::None => {}
        Damage::Cut(s, at) => {
            let segment = &mut segments[s % count];
            let at = at % (segment.len() + 1);
            segment.truncate(at);
        }
        Damage::Flip(s, at, bit) => {
            let segment = &mut segments[s % count];
            if !segment.is_empty() {
                let at = at % segment.len();
                segment[at] ^= 1 << bit;
            }
        }
        Damage::Zero(s, at, n) => {
            let segment = &mut segments[s % count];
            if !segment.is_empty() {
                let at = at % segment.len();
                let end = (at + n).min(segment.len());
                segment[at..end].fill(0);
            }
        }
    }
}

/// The records, cut into segments after the counts in `cuts`, each segment zero-filled
/// by the tail in `zero_tails` (cycled).
fn tiny_segments(records: &[tiny::TinyRecord], cuts: &[usize], zero_tails: &[usize]) -> Vec<Vec<u8>> {
    let mut segments = Vec::new();
    let mut rest = records;
    for (index, &cut) in cuts.iter().enumerate() {
        let (now, later) = rest.split_at(cut.min(rest.len()));
        let mut bytes = Vec::new();
        for record in now {
            bytes.extend(tiny::encode(record.seq, record.op, &record.key, &record.value));
        }
        bytes.resize(bytes.len() + zero_tails[index % zero_tails.len()], 0);
        segments.push(bytes);
        rest = later;
    }
    segments
}

fn tiny_records(max: usize) -> impl Strategy<Value = Vec<tiny::TinyRecord>> {
    prop::collection::vec((any::<bool>(), prop::collection::vec(any::<u8>(), 0..10), prop::collection::vec(any::<u8>(), 0..60)), 0..max)
        .prop_map(|writes| {
            writes
                .into_iter()
                .enumerate()
                .map(|(index, (put, key, value))| tiny::TinyRecord {
                    seq: index as u64 + 1,
                    op: if put { Op::Put } else { Op::Del },
                    key,
                    value: if put { value } else { Vec::new() },
                })
                .collect()
        })
}

/// The Accept checks' positions, in order.
fn accepts(checks: &[ScanCheck]) -> Vec<(usize, u64)> {
    checks
        .iter()
        .filter_map(|check| match check {
            ScanCheck::Accept { segment, offset, .. } => Some((*segment, *offset)),
            _ => None,
        })
        .collect()
}

fn batch_ops() -> impl Strategy<Value = Vec<BatchOp>> {
    let op = (any::<bool>(), prop::collection::vec(any::<u8>(), 0..10), prop::collection::vec(any::<u8>(), 0..200))
        .prop_map(|(put, key, value)| if put { BatchOp::Put { column_family: 0, key, value } } else { BatchOp::Delete { column_family: 0, key } });
    prop::collection::vec(op, 1..4)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn tiny_streaming_yields_the_collecting_scans_records_and_stop(
        records in tiny_records(40),
        cuts in prop::collection::vec(0usize..12, 1..5),
        zero_tails in prop::collection::vec(0usize..40, 1..3),
        damage in damage(),
        flushed in 0u64..6,
    ) {
        let mut segments = tiny_segments(&records, &cuts, &zero_tails);
        apply(&mut segments, &damage);
        let slices: Vec<&[u8]> = segments.iter().map(Vec::as_slice).collect();
        let collected = scan_tiny(&slices, flushed);

        let mut streamed = Vec::new();
        let mut scanner = TinyScanner::new(flushed, CheckLog::dropping());
        let mut going = true;
        for segment in &segments {
            // Each segment from a buffer of its own, as the file backend reads them; a
            // segment fed after the replay ended hands over nothing.
            let own = segment.clone();
            let before = streamed.len();
            let goes_on = scanner.segment(&own, |accepted| streamed.push(accepted));
            if !going {
                prop_assert!(!goes_on);
                prop_assert_eq!(streamed.len(), before);
            }
            going = goes_on;
        }
        let end = scanner.finish();
        prop_assert_eq!(&streamed, &collected.records);
        prop_assert_eq!(end.stop, collected.stop);
        prop_assert_eq!(end.next_seq, collected.next_seq);
        prop_assert!(end.checks.is_empty());

        let mut keeping = TinyScanner::new(flushed, CheckLog::keeping());
        for segment in &segments {
            keeping.segment(segment, |_| {});
        }
        let kept = keeping.finish().checks;
        prop_assert_eq!(&kept, &collected.checks);
        let positions: Vec<(usize, u64)> = streamed.iter().map(|accepted| (accepted.segment, accepted.offset)).collect();
        prop_assert_eq!(accepts(&kept), positions);

        // Only written records, in order (a hole that looks clean, zeros or a cut at a
        // record boundary, ends its segment early: the next one is still read).
        for accepted in &streamed {
            prop_assert_eq!(&accepted.record, &records[accepted.record.seq as usize - 1]);
        }
        prop_assert!(streamed.windows(2).all(|pair| pair[0].record.seq < pair[1].record.seq));
        if matches!(damage, Damage::None) {
            prop_assert_eq!(streamed.len(), records.len().min(cuts.iter().sum::<usize>()));
            prop_assert!(end.stop.reason.is_clean());
            prop_assert_eq!(end.stop.segment, segments.len() - 1);
        }
    }

    #[test]
    fn leveldb_streaming_yields_the_collecting_scans_batches_and_stop(
        batches in prop::collection::vec(batch_ops(), 0..12),
        big in prop::sample::select(vec![0usize, 40_000, 70_000]),
        cuts in prop::collection::vec(0usize..5, 1..4),
        damage in damage(),
    ) {
        let mut seq = 1;
        let mut numbered = Vec::new();
        for (index, mut ops) in batches.into_iter().enumerate() {
            if index == 1 && big > 0 {
                // A record fragmented across 32 KiB blocks.
                ops.push(BatchOp::Put { column_family: 0, key: b"big".to_vec(), value: vec![0xab; big] });
            }
            let batch = WriteBatch::new(seq, ops);
            seq = batch.next_seq();
            numbered.push(batch);
        }
        let mut segments = Vec::new();
        let mut rest = numbered.as_slice();
        for &cut in &cuts {
            let (now, later) = rest.split_at(cut.min(rest.len()));
            let mut writer = LogWriter::new(HeaderKind::Legacy);
            for batch in now {
                writer.add_batch(batch);
            }
            segments.push(writer.into_bytes());
            rest = later;
        }
        apply(&mut segments, &damage);
        let inputs: Vec<LogSegment<'_>> = segments.iter().map(|bytes| LogSegment { bytes, log_number: None }).collect();
        let collected = scan_log(LogFormat::LevelDb, &inputs, 0);

        let mut streamed = Vec::new();
        let mut scanner = LogScanner::new(LogFormat::LevelDb, 0, CheckLog::dropping());
        for segment in &segments {
            let own = segment.clone();
            scanner.segment(LogSegment { bytes: &own, log_number: None }, |accepted| streamed.push(accepted));
        }
        let end = scanner.finish();
        prop_assert_eq!(&streamed, &collected.records);
        prop_assert_eq!(end.stop, collected.stop);
        prop_assert_eq!(end.next_seq, collected.next_seq);
        prop_assert!(end.checks.is_empty());

        let mut keeping = LogScanner::new(LogFormat::LevelDb, 0, CheckLog::keeping());
        for segment in &segments {
            keeping.segment(LogSegment { bytes: segment, log_number: None }, |_| {});
        }
        prop_assert_eq!(&keeping.finish().checks, &collected.checks);

        for accepted in &streamed {
            prop_assert!(numbered.contains(&accepted.batch), "only written batches");
        }
        prop_assert!(streamed.windows(2).all(|pair| pair[0].batch.seq < pair[1].batch.seq));
        if matches!(damage, Damage::None) {
            prop_assert_eq!(streamed.len(), numbered.len().min(cuts.iter().sum::<usize>()));
            prop_assert!(matches!(end.stop.reason, StopReason::End | StopReason::Zero));
        }
    }
}
