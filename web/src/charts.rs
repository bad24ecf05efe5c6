//! Charts drawn with plotters on a canvas. They take samples and draw; nothing here
//! computes a figure. A chart redraws only when its samples change, and its `aria-label`
//! (from [`crate::labels`]) says what the samples show.

use std::rc::Rc;

use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use yew::prelude::*;

/// One line of a line chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub label: String,
    pub color: (u8, u8, u8),
    pub points: Vec<(f64, f64)>,
}

#[derive(Properties, PartialEq)]
pub struct LineChartProps {
    pub title: AttrValue,
    pub x_label: AttrValue,
    pub y_label: AttrValue,
    pub series: Rc<Vec<Series>>,
    #[prop_or(true)]
    pub log_x: bool,
    #[prop_or(520)]
    pub width: u32,
    #[prop_or(300)]
    pub height: u32,
    /// A horizontal reference line, labelled (for example gp3's baseline).
    #[prop_or_default]
    pub reference: Option<(f64, AttrValue)>,
}

#[component]
pub fn LineChart(props: &LineChartProps) -> Html {
    let canvas = use_node_ref();
    {
        let canvas = canvas.clone();
        let deps = (props.series.clone(), props.title.clone(), props.log_x, props.reference.clone());
        let (x_label, y_label) = (props.x_label.clone(), props.y_label.clone());
        use_effect_with(deps, move |(series, title, log_x, reference)| {
            if let Some(element) = canvas.cast::<web_sys::HtmlCanvasElement>() {
                if let Err(error) = draw_lines(element, title, &x_label, &y_label, series, *log_x, reference.as_ref()) {
                    web_sys::console::warn_1(&format!("chart {title}: {error}").into());
                }
            }
        });
    }
    let legend = props.series.iter().map(|line| {
        let (r, g, b) = line.color;
        html! { <li><span class="swatch" style={format!("background: rgb({r}, {g}, {b})")}></span>{ line.label.clone() }</li> }
    });
    let label = crate::labels::line_chart_label(&props.title, &props.x_label, &props.y_label, &props.series);
    html! {
        <figure class="chart">
            <canvas ref={canvas} width={props.width.to_string()} height={props.height.to_string()}
                aria-label={label} role="img" data-series={props.series.len().to_string()} />
            <ul class="chart-legend">
                { for legend }
                if let Some((_, label)) = &props.reference {
                    <li><span class="swatch" style="background: rgb(150, 60, 40)"></span>{ label.clone() }</li>
                }
            </ul>
        </figure>
    }
}

fn draw_lines(
    canvas: web_sys::HtmlCanvasElement,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    log_x: bool,
    reference: Option<&(f64, AttrValue)>,
) -> Result<(), Box<dyn std::error::Error>> {
    let backend = CanvasBackend::with_canvas_object(canvas).ok_or("no 2d context")?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE)?;
    let points = series.iter().flat_map(|line| line.points.iter());
    let (mut x_min, mut x_max, mut y_max) = (f64::MAX, f64::MIN, 0f64);
    for (x, y) in points {
        x_min = x_min.min(*x);
        x_max = x_max.max(*x);
        y_max = y_max.max(*y);
    }
    if let Some((y, _)) = reference {
        y_max = y_max.max(*y);
    }
    if x_min >= x_max {
        x_min = if log_x { 1.0 } else { 0.0 };
        x_max = x_min + 1.0;
    }
    let y_max = if y_max <= 0.0 { 1.0 } else { y_max * 1.1 };
    let mut builder = ChartBuilder::on(&root);
    builder.caption(title, ("sans-serif", 15)).margin(8).x_label_area_size(40).y_label_area_size(64);
    if log_x {
        let mut chart = builder.build_cartesian_2d((x_min..x_max).log_scale(), 0f64..y_max)?;
        chart.configure_mesh().x_desc(x_label).y_desc(y_label).x_label_formatter(&|x| compact(*x)).draw()?;
        draw_series_on(&mut chart, series, reference, x_min, x_max)?;
    } else {
        let mut chart = builder.build_cartesian_2d(x_min..x_max, 0f64..y_max)?;
        chart.configure_mesh().x_desc(x_label).y_desc(y_label).draw()?;
        draw_series_on(&mut chart, series, reference, x_min, x_max)?;
    }
    root.present()?;
    Ok(())
}

fn draw_series_on<'a, X>(
    chart: &mut ChartContext<'a, CanvasBackend, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    series: &[Series],
    reference: Option<&(f64, AttrValue)>,
    x_min: f64,
    x_max: f64,
) -> Result<(), Box<dyn std::error::Error>>
where
    X: Ranged<ValueType = f64>,
{
    for line in series {
        let color = RGBColor(line.color.0, line.color.1, line.color.2);
        // The legend is HTML under the canvas, so it never covers a line.
        chart.draw_series(LineSeries::new(line.points.iter().copied(), color.stroke_width(2)))?;
        chart.draw_series(line.points.iter().map(|(x, y)| Circle::new((*x, *y), 3, color.filled())))?;
    }
    if let Some((y, _)) = reference {
        let grey = RGBColor(150, 60, 40);
        chart.draw_series(LineSeries::new(vec![(x_min, *y), (x_max, *y)], grey.stroke_width(1)))?;
    }
    Ok(())
}

/// 100, 1k, 20k, 1M.
fn compact(x: f64) -> String {
    if x >= 1e6 {
        format!("{}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{}k", x / 1e3)
    } else {
        format!("{x}")
    }
}

/// Bars with a label each (a distribution, or a budget against a limit).
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub color: (u8, u8, u8),
}

#[derive(Properties, PartialEq)]
pub struct BarChartProps {
    pub title: AttrValue,
    pub y_label: AttrValue,
    pub bars: Rc<Vec<Bar>>,
    #[prop_or_default]
    pub limit: Option<(f64, AttrValue)>,
    #[prop_or(520)]
    pub width: u32,
    #[prop_or(260)]
    pub height: u32,
}

#[component]
pub fn BarChart(props: &BarChartProps) -> Html {
    let canvas = use_node_ref();
    {
        let canvas = canvas.clone();
        let deps = (props.bars.clone(), props.title.clone(), props.limit.clone());
        let y_label = props.y_label.clone();
        use_effect_with(deps, move |(bars, title, limit)| {
            if let Some(element) = canvas.cast::<web_sys::HtmlCanvasElement>() {
                if let Err(error) = draw_bars(element, title, &y_label, bars, limit.as_ref()) {
                    web_sys::console::warn_1(&format!("chart {title}: {error}").into());
                }
            }
        });
    }
    let limit = props.limit.as_ref().map(|(value, name)| (*value, name.as_str()));
    let label = crate::labels::bar_chart_label(&props.title, &props.y_label, &props.bars, limit);
    html! {
        <figure class="chart">
            <canvas ref={canvas} width={props.width.to_string()} height={props.height.to_string()}
                aria-label={label} role="img" data-bars={props.bars.len().to_string()} />
        </figure>
    }
}

fn draw_bars(
    canvas: web_sys::HtmlCanvasElement,
    title: &str,
    y_label: &str,
    bars: &[Bar],
    limit: Option<&(f64, AttrValue)>,
) -> Result<(), Box<dyn std::error::Error>> {
    let backend = CanvasBackend::with_canvas_object(canvas).ok_or("no 2d context")?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE)?;
    let mut y_max = bars.iter().map(|bar| bar.value).fold(0f64, f64::max);
    if let Some((limit, _)) = limit {
        y_max = y_max.max(*limit);
    }
    let y_max = if y_max <= 0.0 { 1.0 } else { y_max * 1.4 };
    let count = bars.len().max(1);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(34)
        .y_label_area_size(84)
        .build_cartesian_2d(0f64..count as f64, 0f64..y_max)?;
    // The axis title sits left of the widest tick label, with room between them.
    chart
        .configure_mesh()
        .disable_x_mesh()
        .disable_x_axis()
        .y_desc(y_label)
        .y_label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 13))
        .y_label_formatter(&|y| compact(*y))
        .draw()?;
    let every = (count / 24).max(1);
    chart.draw_series(bars.iter().enumerate().filter(|(index, _)| index % every == 0).map(|(index, bar)| {
        Text::new(
            bar.label.clone(),
            (index as f64 + 0.5, 0.0),
            ("sans-serif", 11).into_font().color(&BLACK).pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Center,
                plotters::style::text_anchor::VPos::Top,
            )),
        )
    }))?;
    chart.draw_series(bars.iter().enumerate().map(|(index, bar)| {
        let color = RGBColor(bar.color.0, bar.color.1, bar.color.2);
        Rectangle::new([(index as f64 + 0.15, 0.0), (index as f64 + 0.85, bar.value)], color.filled())
    }))?;
    if let Some((limit, label)) = limit {
        let red = RGBColor(179, 38, 30);
        chart
            .draw_series(LineSeries::new(vec![(0.0, *limit), (count as f64, *limit)], red.stroke_width(2)))?
            .label(label.to_string())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], red.stroke_width(2)));
        chart.configure_series_labels().position(SeriesLabelPosition::UpperRight).background_style(WHITE.mix(0.85)).draw()?;
    }
    root.present()?;
    Ok(())
}
