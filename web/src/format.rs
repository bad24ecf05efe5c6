//! Numbers in words: the one place the page turns a count or a time into text.
//!
//! - [`count`] a count and its noun, in the singular for one ("1 write", "2 writes",
//!   "20,000 writes"), and [`are`] the verb that agrees with it;
//! - [`ms`] a time as a person reads it ("13.5 ms", "242.9 ms"): to the microsecond below
//!   100 ms, to a tenth above;
//! - [`format_millis`] a time exactly, with as few decimals as exact, for links and typed
//!   fields (what the URL holds must read back to the same instant);
//! - [`format_fixed_millis`] the playhead's time, always two decimals, so it does not
//!   jump about while playing;
//! - [`group_thousands`] 100000 as "100,000".
//!
//! Nothing here depends on the rest of the page.

use walab_core::time::Nanos;

/// 100000 as "100,000".
pub fn group_thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A count and its noun: "1 write", "3 writes", "1,000 syncs". The plural adds an "s"
/// unless the noun is one of the few the page uses that do not (`batch`, `entry`).
pub fn count(value: impl TryInto<u64>, noun: &str) -> String {
    let value = value.try_into().unwrap_or(u64::MAX);
    if value == 1 {
        return format!("1 {noun}");
    }
    format!("{} {}", group_thousands(value), plural(noun))
}

/// The plural of one of the page's nouns.
pub fn plural(noun: &str) -> String {
    if noun.ends_with("ch") || noun.ends_with("sh") || noun.ends_with('s') || noun.ends_with('x') {
        format!("{noun}es")
    } else if let Some(stem) = noun.strip_suffix('y').filter(|stem| !stem.ends_with(['a', 'e', 'o', 'u'])) {
        format!("{stem}ies")
    } else {
        format!("{noun}s")
    }
}

/// "is" for one, "are" for any other count.
pub fn are(value: impl TryInto<u64>) -> &'static str {
    if value.try_into().ok() == Some(1) { "is" } else { "are" }
}

/// A time as text for reading: "13.5 ms", "0.025 ms", "242.9 ms" (microseconds below
/// 100 ms, tenths above; trailing zeros dropped).
pub fn ms(nanos: Nanos) -> String {
    format!("{} ms", ms_number(nanos))
}

/// [`ms`] without its unit.
pub fn ms_number(nanos: Nanos) -> String {
    let step = if nanos.0 >= 100_000_000 { 100_000 } else { 1_000 };
    let rounded = (nanos.0 + step / 2) / step * step;
    format_millis(Nanos(rounded))
}

/// Milliseconds with as few decimals as exact: 1, 1.5, 13.5, 0.025.
pub fn format_millis(nanos: Nanos) -> String {
    let whole = nanos.0 / 1_000_000;
    let fraction = nanos.0 % 1_000_000;
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:06}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// The playhead's time: always two decimals ("12.00"), rounded to the nearest hundredth.
pub fn format_fixed_millis(nanos: Nanos) -> String {
    let hundredths = shown_instant(nanos).0 / 10_000;
    format!("{}.{:02}", hundredths / 100, hundredths % 100)
}

/// The instant the player shows for `nanos`: rounded to the nearest hundredth of a
/// millisecond, so `p` pulls the power at exactly the time on screen.
pub fn shown_instant(nanos: Nanos) -> Nanos {
    Nanos((nanos.0 + 5_000) / 10_000 * 10_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_agree_with_their_number() {
        assert_eq!(count(1u64, "write"), "1 write");
        assert_eq!(count(0u64, "record"), "0 records");
        assert_eq!(count(20_000u64, "write"), "20,000 writes");
        assert_eq!(count(2usize, "batch"), "2 batches");
        assert_eq!(count(3u32, "entry"), "3 entries");
        assert_eq!(count(2u64, "key"), "2 keys");
        assert_eq!(format!("{} {} in flight", count(1u64, "write"), are(1u64)), "1 write is in flight");
        assert_eq!(are(4u64), "are");
    }

    #[test]
    fn times_read_with_few_decimals() {
        assert_eq!(ms(Nanos(242_893_689)), "242.9 ms");
        assert_eq!(ms(Nanos(13_500_000)), "13.5 ms");
        assert_eq!(ms(Nanos(25_000)), "0.025 ms");
        assert_eq!(ms(Nanos(1_234_567)), "1.235 ms");
        assert_eq!(ms(Nanos::from_millis(7)), "7 ms");
        assert_eq!(format_fixed_millis(Nanos(11_996_000)), "12.00");
        assert_eq!(format_millis(shown_instant(Nanos(9_584_000))), "9.58");
    }
}
