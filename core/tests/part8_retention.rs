//! Part 8, branch T: the two gates, with and without a stuck CDC reader.

use walab_core::group_commit::Policy;
use walab_core::sim::tiny::{run, CdcReader, TinyRun, TinySetup};

fn tiny(readers: Vec<CdcReader>) -> TinyRun {
    run(&TinySetup { readers, ..TinySetup::new(Policy::Group) }).unwrap()
}

/// The fork: write 24 acknowledged, F12's manifest edit not yet durable.
fn fork_instant(run: &TinyRun) -> walab_core::time::Nanos {
    let fork = run.ack_of(24).unwrap();
    let edit_10 = run.manifest_durable.iter().find(|(_, edit)| edit.edit == 10).unwrap().0;
    assert!(fork < edit_10);
    fork
}

#[test]
fn wal1_to_wal5_pass_the_first_gate_and_wal6_does_not() {
    let run = tiny(Vec::new());
    let gates = run.gates_at(fork_instant(&run));
    let flushed: Vec<(u64, bool)> = gates.iter().map(|gate| (gate.segment, gate.flushed)).collect();
    assert_eq!(flushed, [(1, true), (2, true), (3, true), (4, true), (5, true), (6, false)]);
}

#[test]
fn a_cdc_reader_at_seq_10_keeps_4_segments_instead_of_1() {
    let kept = |readers| {
        let run = tiny(readers);
        let at = fork_instant(&run);
        run.gates_at(at).iter().filter(|gate| gate.exists).map(|gate| gate.segment).collect::<Vec<u64>>()
    };
    assert_eq!(kept(Vec::new()), [6]);
    assert_eq!(kept(vec![CdcReader { name: "cdc".to_string(), confirmed_seq: 10 }]), [3, 4, 5, 6]);
}
