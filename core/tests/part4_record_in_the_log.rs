//! Part 4, as the simulator writes it: wal-1 after write 4.

use walab_core::group_commit::Policy;
use walab_core::sim::tiny::{run, TinySetup, SEGMENT_BYTES};
use walab_core::time::Nanos;
use walab_core::trace::Event;

#[test]
fn wal1_after_write_4_holds_records_at_0_29_56_85_ending_at_114_then_zeros() {
    // Stop the store just after B3 (write 4) is durable, before anything else happens.
    let run = run(&TinySetup::new(Policy::Group).with_power_cut(Nanos(3_000_001))).unwrap();
    let wal1 = run.trace.file_index("wal-1").unwrap();
    let writes: Vec<(u64, u64)> = run
        .trace
        .events
        .iter()
        .filter_map(|event| match event.event {
            Event::Write { file, offset, bytes } if file == wal1 => Some((offset, offset + bytes)),
            _ => None,
        })
        .collect();
    assert_eq!(writes, [(0, 29), (29, 85), (85, 114)], "B1, B2, B3");
    let media = walab_core::sim::tiny::recover(&run.device.media_image());
    let starts: Vec<u64> = media.scan.records.iter().map(|record| record.offset).collect();
    assert_eq!(starts, [0, 29, 56, 85]);
    let image = run.device.media_image();
    let bytes = image.file("wal-1").unwrap();
    assert_eq!(bytes.len(), SEGMENT_BYTES);
    assert!(bytes[114..].iter().all(|&byte| byte == 0), "the rest of the zero-filled segment stays zero");
    let wal1_end = media.scan.checks.iter().find_map(|check| match check {
        walab_core::scan::ScanCheck::SegmentEnd { segment: 0, offset, reason } => Some((*offset, reason.name())),
        _ => None,
    });
    assert_eq!(wal1_end, Some((114, "zero")), "the scan finds wal-1's end at 114");
}
