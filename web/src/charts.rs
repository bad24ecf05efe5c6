//! Charts drawn as SVG, like every other figure of the lab: they take samples and draw;
//! nothing here computes a figure. The text is real text (sharp on a projector, found by
//! the page's checks) and the chart's `aria-label` (from [`crate::labels`]) says what the
//! samples show.
//!
//! A chart is one string of markup: the lab draws a few of them, and a string costs the
//! page far less code than a tree of elements.

use std::fmt::Write;
use std::rc::Rc;

use yew::prelude::*;

/// One line of a line chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub label: String,
    pub color: (u8, u8, u8),
    pub points: Vec<(f64, f64)>,
}

/// Bars with a label each (a distribution, or a budget against a limit).
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub color: (u8, u8, u8),
}

/// The drawing's size in its own units; on screen it is scaled to the column, at most
/// 4/3 of this, and on a phone about 1:1, so its 13-unit text stays at least 12 px.
const WIDTH: f64 = 360.0;
const HEIGHT: f64 = 230.0;
/// The plot area inside the drawing: room for the caption, the tick labels and the axis
/// titles.
const LEFT: f64 = 58.0;
const RIGHT: f64 = WIDTH - 10.0;
const TOP: f64 = 26.0;
const BOTTOM: f64 = HEIGHT - 40.0;
const REFERENCE_COLOR: (u8, u8, u8) = (150, 60, 40);
const LIMIT_COLOR: (u8, u8, u8) = (179, 38, 30);

/// What a line chart draws; `..LineChartProps::default()` fills what a caller leaves out.
pub struct LineChartProps {
    pub title: AttrValue,
    pub x_label: AttrValue,
    pub y_label: AttrValue,
    pub series: Rc<Vec<Series>>,
    pub log_x: bool,
    /// A horizontal reference line, labelled (for example gp3's baseline).
    pub reference: Option<(f64, AttrValue)>,
}

impl Default for LineChartProps {
    fn default() -> Self {
        let none = AttrValue::Static("");
        LineChartProps { title: none.clone(), x_label: none.clone(), y_label: none, series: Rc::default(), log_x: true, reference: None }
    }
}

/// A line chart: a function, not a component, as it keeps no state.
pub fn line_chart(props: &LineChartProps) -> Html {
    let label = crate::labels::line_chart_label(&props.title, &props.x_label, &props.y_label, &props.series);
    let reference = props.reference.as_ref().map(|(y, name)| (*y, name.as_str()));
    let svg = line_svg(&props.title, &props.x_label, &props.y_label, &props.series, props.log_x, reference, &label);
    let legend = props.series.iter().map(|line| swatch(line.color, &line.label));
    html! {
        <figure class="chart">
            { Html::from_html_unchecked(svg.into()) }
            <ul class="chart-legend">
                { for legend }
                if let Some((_, name)) = &props.reference { { swatch(REFERENCE_COLOR, name) } }
            </ul>
        </figure>
    }
}

/// What a bar chart draws; `..BarChartProps::default()` fills what a caller leaves out.
#[derive(Default)]
pub struct BarChartProps {
    pub title: AttrValue,
    pub y_label: AttrValue,
    pub bars: Rc<Vec<Bar>>,
    pub limit: Option<(f64, AttrValue)>,
}

/// A bar chart: a function, not a component, as it keeps no state.
pub fn bar_chart(props: &BarChartProps) -> Html {
    let limit = props.limit.as_ref().map(|(value, name)| (*value, name.as_str()));
    let label = crate::labels::bar_chart_label(&props.title, &props.y_label, &props.bars, limit);
    let svg = bar_svg(&props.title, &props.y_label, &props.bars, limit, &label);
    html! {
        <figure class="chart">
            { Html::from_html_unchecked(svg.into()) }
            if let Some((_, name)) = limit { <ul class="chart-legend">{ swatch(LIMIT_COLOR, name) }</ul> }
        </figure>
    }
}

fn swatch((r, g, b): (u8, u8, u8), label: &str) -> Html {
    html! { <li><span class="swatch" style={format!("background: rgb({r}, {g}, {b})")}></span>{ label.to_string() }</li> }
}

/// Text made safe inside markup.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The opening of a chart's drawing: its size, what it says to a screen reader, its
/// caption and the y axis's title.
fn open(out: &mut String, title: &str, y_label: &str, label: &str, data: &str) {
    let _ = write!(
        out,
        r#"<svg class="chart-svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{}" {data}><text class="chart-title" x="{}" y="16" text-anchor="middle">{}</text><text class="chart-axis-title" transform="translate(13 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        escape(label),
        WIDTH / 2.0,
        escape(title),
        (TOP + BOTTOM) / 2.0,
        escape(y_label),
    );
}

/// A step of 1, 2 or 5 times a power of ten that cuts `span` into about `count` parts.
fn nice_step(span: f64, count: f64) -> f64 {
    let raw = (span / count).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    let scaled = raw / magnitude;
    magnitude * if scaled < 1.5 { 1.0 } else if scaled < 3.0 { 2.0 } else if scaled < 7.0 { 5.0 } else { 10.0 }
}

/// 0.5, 30, 1.2k, 20k, 1M.
fn compact(x: f64) -> String {
    let (value, unit) = if x.abs() >= 1e6 { (x / 1e6, "M") } else if x.abs() >= 1e3 { (x / 1e3, "k") } else { (x, "") };
    let text = format!("{:.2}", value);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{unit}")
}

/// A bar's value as its label: whole numbers grouped by thousands, small ones to a tenth.
fn bar_value(value: f64) -> String {
    if value >= 100.0 || value.fract() == 0.0 {
        crate::format::group_thousands(value.max(0.0).round() as u64)
    } else {
        format!("{value:.1}")
    }
}

/// The y axis: from 0 to a tick at or above `y_max`, its grid lines and labels. Returns
/// the scale's top.
fn y_axis(out: &mut String, y_max: f64) -> f64 {
    let step = nice_step(if y_max > 0.0 { y_max } else { 1.0 }, 4.0);
    let top = (y_max / step).ceil().max(1.0) * step;
    let mut tick = 0.0;
    while tick <= top + step / 2.0 {
        let y = BOTTOM - (BOTTOM - TOP) * tick / top;
        let _ = write!(
            out,
            r#"<line class="chart-grid" x1="{LEFT}" x2="{RIGHT}" y1="{y:.1}" y2="{y:.1}"/><text class="chart-tick" x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 5.0,
            y + 4.5,
            compact(tick),
        );
        tick += step;
    }
    top
}

fn line_svg(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    log_x: bool,
    reference: Option<(f64, &str)>,
    label: &str,
) -> String {
    let mut out = String::new();
    open(&mut out, title, y_label, label, &format!(r#"data-series="{}""#, series.len()));
    let points = series.iter().flat_map(|line| line.points.iter()).filter(|(x, _)| !log_x || *x > 0.0);
    let (mut x_min, mut x_max, mut y_max) = (f64::MAX, f64::MIN, 0f64);
    for (x, y) in points {
        x_min = x_min.min(*x);
        x_max = x_max.max(*x);
        y_max = y_max.max(*y);
    }
    if let Some((y, _)) = reference {
        y_max = y_max.max(y);
    }
    if x_min >= x_max {
        x_min = if log_x { 1.0 } else { 0.0 };
        x_max = x_min + 1.0;
    }
    let top = y_axis(&mut out, y_max * 1.05);
    let axis = |x: f64| if log_x { x.log10() } else { x };
    let (a_min, a_max) = (axis(x_min), axis(x_max));
    let to_x = |x: f64| LEFT + (RIGHT - LEFT) * (axis(x) - a_min) / (a_max - a_min);
    let to_y = |y: f64| BOTTOM - (BOTTOM - TOP) * y / top;
    // Ticks on the x axis: powers of ten on a log axis (with 2 and 5 between them when
    // the range spans less than three), even steps on a linear one.
    let mut ticks = Vec::new();
    if log_x {
        let decades = a_max.floor() - a_min.ceil();
        let multiples: &[f64] = if decades < 2.0 { &[1.0, 2.0, 5.0] } else { &[1.0] };
        let mut power = 10f64.powf(a_min.floor());
        while power <= x_max {
            ticks.extend(multiples.iter().map(|m| m * power).filter(|x| *x >= x_min && *x <= x_max));
            power *= 10.0;
        }
    } else {
        let step = nice_step(x_max - x_min, 5.0);
        let mut x = (x_min / step).ceil() * step;
        while x <= x_max {
            ticks.push(x);
            x += step;
        }
    }
    for x in ticks {
        let _ = write!(
            out,
            r#"<text class="chart-tick" x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            to_x(x),
            BOTTOM + 16.0,
            compact(x)
        );
    }
    axes(&mut out, x_label);
    if let Some((y, _)) = reference {
        let (r, g, b) = REFERENCE_COLOR;
        let _ = write!(out, r#"<line x1="{LEFT}" x2="{RIGHT}" y1="{0:.1}" y2="{0:.1}" stroke="rgb({r},{g},{b})"/>"#, to_y(y));
    }
    for line in series {
        let (r, g, b) = line.color;
        let shown: Vec<(f64, f64)> =
            line.points.iter().filter(|(x, _)| !log_x || *x > 0.0).map(|(x, y)| (to_x(*x), to_y(*y))).collect();
        let path: Vec<String> = shown.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = write!(out, r#"<g stroke="rgb({r},{g},{b})" fill="rgb({r},{g},{b})"><polyline fill="none" stroke-width="2" points="{}"/>"#, path.join(" "));
        for (x, y) in shown {
            let _ = write!(out, r#"<circle cx="{x:.1}" cy="{y:.1}" r="2.5"/>"#);
        }
        out.push_str("</g>");
    }
    out.push_str("</svg>");
    out
}

/// `text` in lines of at most `chars` characters, broken between words (a word longer
/// than a line gets a line of its own).
fn wrap(text: &str, chars: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.len() + 1 + word.len() <= chars => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// The two axis lines and the x axis's title.
fn axes(out: &mut String, x_label: &str) {
    let _ = write!(
        out,
        r#"<path class="chart-axis" d="M{LEFT} {TOP}V{BOTTOM}H{RIGHT}" fill="none"/><text class="chart-axis-title" x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (LEFT + RIGHT) / 2.0,
        HEIGHT - 5.0,
        escape(x_label)
    );
}

fn bar_svg(title: &str, y_label: &str, bars: &[Bar], limit: Option<(f64, &str)>, label: &str) -> String {
    let mut out = String::new();
    open(&mut out, title, y_label, label, &format!(r#"data-bars="{}""#, bars.len()));
    let mut y_max = bars.iter().map(|bar| bar.value).fold(0f64, f64::max);
    if let Some((limit, _)) = limit {
        y_max = y_max.max(limit);
    }
    let top = y_axis(&mut out, y_max * 1.1);
    let count = bars.len().max(1) as f64;
    let slot = (RIGHT - LEFT) / count;
    let to_y = |y: f64| BOTTOM - (BOTTOM - TOP) * y / top;
    // A label under every bar, on up to two lines, while they fit; else every k-th one.
    let chars = ((slot - 4.0) / 7.0).floor().max(1.0) as usize;
    let wrapped: Vec<Vec<String>> = bars.iter().map(|bar| wrap(&bar.label, chars)).collect();
    let fits = wrapped.iter().all(|lines| lines.len() <= 2 && lines.iter().all(|line| line.len() <= chars));
    let longest = bars.iter().map(|bar| bar.label.len()).max().unwrap_or(1) as f64;
    let every = if fits { 1 } else { ((longest * 7.5 + 4.0) / slot).ceil().max(1.0) as usize };
    for (index, bar) in bars.iter().enumerate() {
        let (r, g, b) = bar.color;
        let x = LEFT + slot * index as f64;
        let y = to_y(bar.value.max(0.0));
        let _ = write!(
            out,
            r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="rgb({r},{g},{b})"/>"#,
            x + slot * 0.15,
            slot * 0.7,
            BOTTOM - y
        );
        // The bar's value over it, where it fits the bar's slot.
        let value = bar_value(bar.value);
        if slot >= 7.5 * value.len() as f64 + 4.0 {
            let _ = write!(out, r#"<text class="chart-value" x="{:.1}" y="{:.1}" text-anchor="middle">{value}</text>"#, x + slot / 2.0, y - 4.0);
        }
        if index % every == 0 {
            let lines = if fits { wrapped[index].clone() } else { vec![bar.label.clone()] };
            for (line_index, line) in lines.iter().enumerate() {
                let _ = write!(
                    out,
                    r#"<text class="chart-tick" x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
                    x + slot / 2.0,
                    BOTTOM + 16.0 + 14.0 * line_index as f64,
                    escape(line)
                );
            }
        }
    }
    axes(&mut out, "");
    if let Some((limit, _)) = limit {
        let (r, g, b) = LIMIT_COLOR;
        let _ = write!(out, r#"<line x1="{LEFT}" x2="{RIGHT}" y1="{0:.1}" y2="{0:.1}" stroke="rgb({r},{g},{b})" stroke-width="2"/>"#, to_y(limit));
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(100.0, 4.0), 20.0);
        assert_eq!(nice_step(7.0, 4.0), 2.0);
        assert_eq!(nice_step(0.9, 4.0), 0.2);
        assert_eq!(nice_step(30_000.0, 5.0), 5_000.0);
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(compact(0.0), "0");
        assert_eq!(compact(0.25), "0.25");
        assert_eq!(compact(1_500.0), "1.5k");
        assert_eq!(compact(20_000.0), "20k");
        assert_eq!(compact(1_000_000.0), "1M");
    }

    #[test]
    fn a_line_chart_draws_every_point_inside_its_plot() {
        let series = vec![Series { label: "a".into(), color: (1, 2, 3), points: vec![(100.0, 1.0), (1_000.0, 4.0), (10_000.0, 2.0)] }];
        let svg = line_svg("t", "x", "y", &series, true, Some((3.0, "ref")), "label");
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains(r#"data-series="1""#) && svg.contains(">100<") && svg.contains(">10k<"), "{svg}");
        for cx in svg.split(r#"cx=""#).skip(1).map(|rest| rest.split('"').next().unwrap().parse::<f64>().unwrap()) {
            assert!((LEFT..=RIGHT).contains(&cx), "{cx} outside the plot");
        }
    }

    #[test]
    fn labels_wrap_between_words() {
        assert_eq!(wrap("one shared volume", 12), vec!["one shared", "volume"]);
        assert_eq!(wrap("log syncs", 12), vec!["log syncs"]);
        assert_eq!(wrap("unbreakable-word x", 4), vec!["unbreakable-word", "x"]);
    }

    #[test]
    fn a_bar_chart_escapes_its_text_and_draws_each_bar() {
        let bars = vec![Bar { label: "<a&b>".into(), value: 5.0, color: (0, 0, 0) }, Bar { label: "c".into(), value: 0.0, color: (0, 0, 0) }];
        let svg = bar_svg("t", "y", &bars, Some((10.0, "limit")), "l \"quoted\"");
        assert_eq!(svg.matches("<rect").count(), 2);
        assert!(svg.contains("&lt;a&amp;b&gt;") && svg.contains("l &quot;quoted&quot;") && !svg.contains("<a&b>"), "{svg}");
        assert!(svg.contains(r#"text-anchor="middle">5</text>"#) && svg.contains(r#"text-anchor="middle">0</text>"#), "each bar's value over it: {svg}");
        assert_eq!(bar_value(1_763.0), "1,763");
        assert_eq!(bar_value(15.625), "15.6");
    }
}
