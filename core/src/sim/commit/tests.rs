use super::*;

fn ms(tenths: u64) -> Nanos {
    Nanos::from_tenth_millis(tenths)
}

#[test]
fn even_arrivals_sit_in_the_middle_of_their_slots() {
    let arrivals = Arrivals::Even { rate_per_s: 100_000, count: 3 };
    let times: Vec<Nanos> = arrivals.stream().collect();
    assert_eq!(times, [Nanos(5_000), Nanos(15_000), Nanos(25_000)]);
}

#[test]
fn poisson_arrivals_are_seeded_and_sorted() {
    let a: Vec<Nanos> = Arrivals::Poisson { rate_per_s: 1000, count: 50, seed: 4 }.stream().collect();
    let b: Vec<Nanos> = Arrivals::Poisson { rate_per_s: 1000, count: 50, seed: 4 }.stream().collect();
    assert_eq!(a, b);
    assert!(a.windows(2).all(|pair| pair[0] <= pair[1]));
}

#[test]
fn bad_setups_are_refused() {
    let setup = CommitSetup::new(Config::file(Policy::Group), Nanos(1_000_000));
    assert_eq!(
        run(&setup, &Arrivals::Given(vec![ms(5), ms(3)])).err(),
        Some(SetupError::Arrivals(ArrivalsError::Unsorted { index: 1 }))
    );
    assert_eq!(run(&setup, &Arrivals::Given(vec![])).err(), Some(SetupError::Arrivals(ArrivalsError::Empty)));
    let zero = CommitSetup::new(Config::file(Policy::Group), Nanos::ZERO);
    assert_eq!(run(&zero, &Arrivals::Given(vec![ms(0)])).err(), Some(SetupError::LatencyZero));
}

#[test]
fn backpressure_pauses_writers_without_losing_their_order() {
    let config = Config { batch_bytes_max: 100, unflushed_bytes_max: 200, ..Config::file(Policy::Group) };
    let setup = CommitSetup { keep: Keep::ALL, ..CommitSetup::new(config, Nanos(1_000_000)) };
    let arrivals = Arrivals::Given(vec![Nanos::ZERO; 10]);
    let run = run(&setup, &arrivals).unwrap();
    assert_eq!(run.summary.acked, 10);
    let acks: Vec<Nanos> = run.writes.iter().map(|write| write.ack.unwrap()).collect();
    assert!(acks.windows(2).all(|pair| pair[0] <= pair[1]), "acknowledged in order: {acks:?}");
    assert!(run.batches.iter().all(|batch| batch.bytes <= 100));
}

#[test]
fn periodic_records_when_writes_became_durable() {
    let config = Config::file(Policy::Periodic { interval: Nanos(5_000_000) });
    let setup = CommitSetup { keep: Keep::ALL, ..CommitSetup::new(config, Nanos(1_000_000)) };
    let run = run(&setup, &Arrivals::Given(vec![ms(0), ms(10), ms(60)])).unwrap();
    let durable: Vec<Option<Nanos>> = run.writes.iter().map(|write| write.durable).collect();
    assert_eq!(durable, [Some(ms(60)), Some(ms(60)), Some(ms(110))]);
    assert!(run.writes.iter().all(|write| write.wait() == Some(Nanos::ZERO)));
}
