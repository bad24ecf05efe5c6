//! What a chart says to someone who cannot see it: each drawn chart carries an
//! `aria-label` built here from the same values it draws, so a screen reader hears what
//! the picture shows at this step ("at t = 3.40 ms: 8 writes acknowledged, 4 in a sync
//! ..."), not a generic "chart".

use walab_core::time::Nanos;

use crate::model::trace_view::{Phase, TraceSpans};
use crate::charts::{Bar, Series};
use crate::player::format_fixed_millis;
use crate::url_state::format_millis;

/// The lanes of writes and syncs at `now`.
pub fn lanes_label(spans: &TraceSpans, now: Nanos, cut: Option<Nanos>) -> String {
    let count = |phase: Phase| (0..spans.writes.len()).filter(|index| spans.phase_at(*index, now) == phase).count();
    let running: Vec<String> = spans
        .batches
        .iter()
        .filter(|batch| batch.start <= now && batch.end.is_none_or(|end| end > now))
        .map(|batch| if batch.first_write == 0 { format!("S{}", batch.id) } else { format!("B{}", batch.id) })
        .collect();
    let mut label = format!(
        "Writes and syncs over time, at t = {} ms: {} of {} writes acknowledged, {} in a running sync, {} queued, {} failed, {} not yet arrived",
        format_fixed_millis(now),
        count(Phase::Acked),
        spans.writes.len(),
        count(Phase::Syncing),
        count(Phase::Queued),
        count(Phase::Failed),
        count(Phase::NotYet),
    );
    if !running.is_empty() {
        label.push_str(&format!("; sync running: {}", running.join(", ")));
    }
    if let Some(cut) = cut {
        label.push_str(&format!("; the power fails at {} ms", format_millis(cut)));
    }
    label.push('.');
    label
}

fn number(value: f64) -> String {
    if value >= 100.0 || value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}

/// A line chart: each line from its first point to its last.
pub fn line_chart_label(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let lines: Vec<String> = series
        .iter()
        .filter_map(|line| {
            let (first, last) = (line.points.first()?, line.points.last()?);
            Some(format!(
                "{}: {} {} at {} {}, {} at {}",
                line.label,
                y_label,
                number(first.1),
                x_label,
                number(first.0),
                number(last.1),
                number(last.0)
            ))
        })
        .collect();
    if lines.is_empty() {
        return format!("{title}: no data");
    }
    format!("{title}. {}.", lines.join("; "))
}

/// A bar chart: how many bars, the largest, and the limit line.
pub fn bar_chart_label(title: &str, y_label: &str, bars: &[Bar], limit: Option<(f64, &str)>) -> String {
    let Some(largest) = bars.iter().max_by(|a, b| a.value.total_cmp(&b.value)) else { return format!("{title}: no data") };
    let listed: Vec<String> = bars.iter().take(8).map(|bar| format!("{} {}", bar.label, number(bar.value))).collect();
    let mut label = format!("{title} ({y_label}), {} bars, largest {} at {}: {}", bars.len(), number(largest.value), largest.label, listed.join(", "));
    if bars.len() > 8 {
        label.push_str(", …");
    }
    if let Some((limit, name)) = limit {
        label.push_str(&format!("; limit {}: {name}", number(limit)));
    }
    label.push('.');
    label
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lanes_say_what_they_show_at_the_playhead() {
        let model = crate::model::tiny::for_link("part=6");
        let spans = model.spans().unwrap();
        let start = lanes_label(spans, Nanos::ZERO, None);
        assert!(start.contains("0 of 24 writes acknowledged"), "{start}");
        let end = lanes_label(spans, spans.end, Some(Nanos(13_500_000)));
        assert!(end.contains("24 of 24 writes acknowledged"), "{end}");
        assert!(end.ends_with("the power fails at 13.5 ms."), "{end}");
    }

    #[test]
    fn charts_name_their_lines_and_bars() {
        let series = vec![Series { label: "group commit".into(), color: (0, 0, 0), points: vec![(100.0, 0.5), (1e6, 3.25)] }];
        assert_eq!(
            line_chart_label("mean wait against load", "writes per second", "mean wait (ms)", &series),
            "mean wait against load. group commit: mean wait (ms) 0.50 at writes per second 100, 3.25 at 1000000."
        );
        let bars = vec![Bar { label: "log".into(), value: 3000.0, color: (0, 0, 0) }, Bar { label: "LSM".into(), value: 1200.0, color: (0, 0, 0) }];
        assert_eq!(
            bar_chart_label("IOPS", "I/Os per second", &bars, Some((3000.0, "gp3 baseline"))),
            "IOPS (I/Os per second), 2 bars, largest 3000 at log: log 3000, LSM 1200; limit 3000: gp3 baseline."
        );
    }
}
