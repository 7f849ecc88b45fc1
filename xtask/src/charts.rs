//! The bench figures drawn as SVG charts (issue #35): what `cargo xtask bench` measured,
//! redrawn from the JSON its runs write, so a chart never says anything its data does not.
//!
//! - `raw.json` (the main run, every round of every implementation): HTTP requests per second
//!   and CPU per call against the number of connections, the median of the rounds.
//! - `scale.json` (`--scale`): the memory each unit costs, and a plain call's p99, against the
//!   number of units.
//! - `builds.json` (the build figures): clean and incremental builds of a one-tool server.
//!
//! A full run draws into `docs/performance/` beside a copy of its data; `cargo xtask bench
//! --charts` redraws from that copy (or from `target/bench/` after a run of one's own).

use plotters::coord::Shift;
use plotters::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

const SIZE: (u32, u32) = (760, 440);
const FONT: &str = "sans-serif";

/// One colour per implementation, the same in every chart.
fn colour(name: &str) -> RGBColor {
    match name {
        "ours" => RGBColor(31, 100, 180),
        "ours-otel" => RGBColor(120, 170, 225),
        "rmcp" => RGBColor(220, 110, 20),
        "floor" => RGBColor(90, 90, 90),
        "python" => RGBColor(40, 150, 70),
        _ => RGBColor(150, 60, 160),
    }
}

/// One line of a chart: its label, its colour and its points.
struct Line {
    label: String,
    colour: RGBColor,
    points: Vec<(f64, f64)>,
}

/// A chart of lines on a logarithmic x axis (connections, units).
struct Plot<'a> {
    title: String,
    x_label: &'a str,
    y_label: &'a str,
    /// The x axis's base: its marks are the powers of it (2 for connections, 10 for units).
    base: f64,
    /// Where the legend goes: where the lines leave room.
    legend: SeriesLabelPosition,
    /// The top of the y axis as a multiple of the highest point: room for a legend above.
    headroom: f64,
    lines: Vec<Line>,
}

/// Draws every chart whose data is in `data` into `out`; the files written. A data file that is
/// absent draws nothing; one that is present but unreadable is an error naming it.
pub(crate) fn draw(data: &Path, out: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut charts: Vec<(&str, String)> = Vec::new();
    if let Some(raw) = read(&data.join("raw.json"))? {
        charts.push(("http-throughput.svg", svg(&throughput(&raw))?));
        charts.push(("http-cpu.svg", svg(&cpu(&raw))?));
    }
    if let Some(scale) = read(&data.join("scale.json"))? {
        charts.push(("scale-memory.svg", svg(&scale_memory(&scale))?));
        charts.push(("scale-p99.svg", svg(&scale_p99(&scale))?));
    }
    if let Some(builds) = read(&data.join("builds.json"))? {
        charts.push(("builds.svg", builds_svg(&builds)?));
    }
    let mut written = Vec::new();
    for (name, text) in charts {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

fn read(path: &Path) -> Result<Option<Value>, String> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("{}: not the JSON a bench run writes: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// The implementations of a main run, in the order of its first round.
fn implementations(raw: &Value) -> Vec<String> {
    raw[0]
        .as_object()
        .map(|round| round.keys().cloned().collect())
        .unwrap_or_default()
}

/// The median over the rounds of one HTTP level's figure, per number of connections.
fn http_line(raw: &Value, name: &str, key: &str) -> Line {
    let rounds = raw.as_array().cloned().unwrap_or_default();
    let mut conns: Vec<u64> = rounds
        .iter()
        .flat_map(|round| levels(&round[name]["http"]))
        .filter_map(|level| level["conns"].as_u64())
        .collect();
    conns.sort_unstable();
    conns.dedup();
    let points = conns
        .into_iter()
        .filter_map(|c| {
            let values = rounds.iter().map(|round| {
                levels(&round[name]["http"])
                    .into_iter()
                    .find(|level| level["conns"].as_u64() == Some(c))
                    .and_then(|level| level[key].as_f64())
            });
            super::bench::median(values).map(|v| (c as f64, v))
        })
        .collect();
    Line {
        label: name.to_owned(),
        colour: colour(name),
        points,
    }
}

fn levels(http: &Value) -> Vec<Value> {
    http["levels"].as_array().cloned().unwrap_or_default()
}

fn throughput(raw: &Value) -> Plot<'static> {
    Plot {
        title: "HTTP tools/call: requests per second".into(),
        x_label: "connections (each with one call in flight)",
        y_label: "requests/s",
        base: 2.0,
        legend: SeriesLabelPosition::UpperLeft,
        headroom: 1.15,
        lines: implementations(raw)
            .iter()
            .map(|name| http_line(raw, name, "rps"))
            .collect(),
    }
}

/// The Python SDK spends ten to twenty times a Rust server's CPU per call: drawn beside them it
/// would flatten every other line, so its figures go into the title instead.
fn cpu(raw: &Value) -> Plot<'static> {
    let (python, lines): (Vec<Line>, Vec<Line>) = implementations(raw)
        .iter()
        .map(|name| http_line(raw, name, "cpu_us_per_req"))
        .partition(|line| line.label == "python");
    let mut title = String::from("HTTP tools/call: server CPU time per call");
    let python: Vec<f64> = python
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .collect();
    if !python.is_empty() {
        let (low, high) = python
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        title.push_str(&format!(" (python, not drawn: {low:.0}–{high:.0} µs)"));
    }
    Plot {
        title,
        x_label: "connections (each with one call in flight)",
        y_label: "CPU µs per call",
        base: 2.0,
        legend: SeriesLabelPosition::UpperRight,
        headroom: 1.15,
        lines,
    }
}

/// One line per series and server of a scale run: `key` of every step against its units.
fn scale_lines(scale: &Value, key: &str) -> Vec<Line> {
    let series = scale.as_array().cloned().unwrap_or_default();
    // The two task series share a kind: the one with a watched process lives in Redis.
    let palette = [
        RGBColor(31, 100, 180),
        RGBColor(40, 150, 70),
        RGBColor(150, 60, 160),
        RGBColor(200, 40, 50),
        RGBColor(0, 150, 160),
        RGBColor(120, 120, 30),
    ];
    let mut ours = 0;
    let mut others = 0;
    series
        .iter()
        .map(|entry| {
            let measured = &entry["measured"];
            let steps = measured["steps"].as_array().cloned().unwrap_or_default();
            let redis = steps.iter().any(|s| s.get("watched_kb_per_unit").is_some());
            let server = entry["server"].as_str().unwrap_or("?");
            let kind = measured["kind"].as_str().unwrap_or("?");
            let what = match (kind, redis) {
                ("sessions", _) => "idle sessions",
                ("streams", _) => "sessions + GET stream",
                ("listen", _) => "listen streams",
                ("tasks", false) => "tasks in memory",
                ("tasks", true) if key == "kb_per_unit" => "tasks in Redis (Redis's RSS)",
                ("tasks", true) => "tasks in Redis",
                ("tools", _) => "registry tools",
                (other, _) => other,
            };
            let key = if redis && key == "kb_per_unit" {
                "watched_kb_per_unit"
            } else {
                key
            };
            let colour = if server == "ours" {
                ours += 1;
                palette[(ours - 1) % palette.len()]
            } else {
                others += 1;
                // rmcp's second series a darker shade of its colour.
                let RGBColor(r, g, b) = colour(server);
                let shade = |c: u8| (f64::from(c) * 0.6f64.powi(others - 1)) as u8;
                RGBColor(shade(r), shade(g), shade(b))
            };
            let per_unit = key.ends_with("kb_per_unit");
            let points = steps
                .iter()
                // A step that adds less than RSS can show has no cost per unit to draw.
                .filter(|s| !per_unit || super::scale::readable(s, key))
                .filter_map(|s| Some((s["units"].as_f64()?, s[key].as_f64()?)))
                .collect();
            Line {
                label: format!("{what} ({server})"),
                colour,
                points,
            }
        })
        .collect()
}

fn scale_memory(scale: &Value) -> Plot<'static> {
    Plot {
        title: "How memory grows: KiB per unit as the units grow".into(),
        x_label: "units held (log scale)",
        y_label: "KiB per unit",
        base: 10.0,
        legend: SeriesLabelPosition::UpperRight,
        // Eight lines in the legend: the upper half of the chart is theirs.
        headroom: 2.1,
        lines: scale_lines(scale, "kb_per_unit"),
    }
}

fn scale_p99(scale: &Value) -> Plot<'static> {
    Plot {
        title: "A plain call's p99 beside the units held".into(),
        x_label: "units held (log scale)",
        y_label: "plain call p99 (µs)",
        base: 10.0,
        legend: SeriesLabelPosition::UpperRight,
        headroom: 2.1,
        lines: scale_lines(scale, "call_p99_us"),
    }
}

fn chart_error(e: impl std::fmt::Display) -> String {
    format!("drawing a chart: {e}")
}

/// Renders a line chart to SVG text.
fn svg(plot: &Plot<'_>) -> Result<String, String> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, SIZE).into_drawing_area();
        lines(&root, plot)?;
        root.present().map_err(chart_error)?;
    }
    Ok(text)
}

fn lines(root: &DrawingArea<SVGBackend<'_>, Shift>, plot: &Plot<'_>) -> Result<(), String> {
    root.fill(&WHITE).map_err(chart_error)?;
    // x is drawn as its logarithm, so that every power of the base is one step of the axis.
    let log = |x: f64| x.log(plot.base);
    let (mut x_min, mut x_max, mut y_max) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in plot.lines.iter().flat_map(|l| l.points.iter()) {
        x_min = x_min.min(log(x));
        x_max = x_max.max(log(x));
        y_max = y_max.max(y);
    }
    if x_min > x_max {
        return Err(format!("{}: no figures to draw", plot.title));
    }
    // Some room on either side of the outer points, and above the highest.
    let x_range = (x_min.floor() - 0.3)..(x_max.ceil() + 0.3);
    let marks = (x_range.end - x_range.start).ceil() as usize + 1;
    let y_range = 0.0..(y_max * plot.headroom).max(1.0);
    let mut chart = ChartBuilder::on(root)
        .caption(&plot.title, (FONT, 20))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x_range, y_range)
        .map_err(chart_error)?;
    let base = plot.base;
    chart
        .configure_mesh()
        .x_desc(plot.x_label)
        .y_desc(plot.y_label)
        .x_labels(marks)
        // A mark at each power of the base, named by its value; none between.
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() < 1e-9 {
                whole(base.powf(x.round()))
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| whole(*y))
        .label_style((FONT, 13))
        .light_line_style(WHITE)
        .draw()
        .map_err(chart_error)?;
    for line in &plot.lines {
        let colour = line.colour;
        let style = ShapeStyle::from(colour).stroke_width(2);
        chart
            .draw_series(LineSeries::new(
                line.points.iter().map(|&(x, y)| (log(x), y)),
                style,
            ))
            .map_err(chart_error)?
            .label(line.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
        chart
            .draw_series(
                line.points
                    .iter()
                    .map(|&(x, y)| Circle::new((log(x), y), 3, colour.filled())),
            )
            .map_err(chart_error)?;
    }
    chart
        .configure_series_labels()
        .position(plot.legend.clone())
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font((FONT, 13))
        .draw()
        .map_err(chart_error)
}

/// A number as an axis shows it: whole, with thousands grouped; one decimal for a fraction
/// below ten.
fn whole(v: f64) -> String {
    if v.abs() < 10.0 && (v - v.round()).abs() > 1e-9 {
        return format!("{v:.1}");
    }
    let digits = format!("{:.0}", v.abs());
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    if v < 0.0 {
        grouped.insert(0, '-');
    }
    grouped
}

/// The build figures as horizontal bars: clean and incremental builds of each server.
fn builds_svg(builds: &Value) -> Result<String, String> {
    let servers = [
        ("ours_default", "ours, default features"),
        ("ours_lean", "ours, macros + stdio"),
        ("rmcp", "rmcp 3.11 (server, macros, io)"),
    ];
    let bars: Vec<(&str, f64, f64)> = servers
        .iter()
        .filter_map(|(key, label)| {
            let clean = super::builds::seconds_median(&builds[*key]["clean_s"])?;
            let incremental =
                super::builds::seconds_median(&builds[*key]["incremental_s"]).unwrap_or(0.0);
            Some((*label, clean, incremental))
        })
        .collect();
    if bars.is_empty() {
        return Err("builds.json: no build figures to draw".into());
    }
    let top = bars.iter().map(|b| b.1).fold(0.0, f64::max) * 1.2;
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (SIZE.0, 300)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let rows = bars.len() as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Debug build of a one-tool stdio server (wall-clock s)",
                (FONT, 20),
            )
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(210)
            .build_cartesian_2d(0.0..top, 0.0..rows)
            .map_err(chart_error)?;
        let labels: Vec<&str> = bars.iter().map(|b| b.0).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(bars.len() * 2 + 1)
            .y_label_formatter(&|y| {
                // A label at the middle of each bar's row, none elsewhere.
                let row = y - 0.5;
                if (row - row.round()).abs() < 1e-6 && row >= 0.0 {
                    labels
                        .get(labels.len() - 1 - row.round() as usize)
                        .map_or_else(String::new, |s| (*s).to_owned())
                } else {
                    String::new()
                }
            })
            .x_desc("seconds")
            .light_line_style(WHITE)
            .label_style((FONT, 13))
            .draw()
            .map_err(chart_error)?;
        let clean = RGBColor(31, 100, 180);
        let incremental = RGBColor(220, 110, 20);
        for (i, (_, secs, inc)) in bars.iter().enumerate() {
            let y = rows - 1.0 - i as f64;
            chart
                .draw_series([
                    Rectangle::new([(0.0, y + 0.5), (*secs, y + 0.85)], clean.filled()),
                    Rectangle::new([(0.0, y + 0.15), (*inc, y + 0.5)], incremental.filled()),
                ])
                .map_err(chart_error)?;
            chart
                .draw_series([
                    Text::new(format!("{secs:.1} s clean"), (*secs, y + 0.8), (FONT, 12)),
                    Text::new(format!("{inc:.2} s rebuild"), (*inc, y + 0.45), (FONT, 12)),
                ])
                .map_err(chart_error)?;
        }
        root.present().map_err(chart_error)?;
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw() -> Value {
        let level =
            |c: u64, rps: f64, cpu: f64| json!({"conns": c, "rps": rps, "cpu_us_per_req": cpu});
        let round = |ours: f64| {
            json!({
                "ours": {"http": {"levels": [level(1, ours, 80.0), level(16, ours * 4.0, 30.0)]}},
                "rmcp": {"http": {"levels": [level(1, 900.0, 120.0), level(16, 2000.0, 60.0)]}},
            })
        };
        json!([round(1000.0), round(3000.0), round(2000.0)])
    }

    #[test]
    fn a_line_is_the_median_of_the_rounds_at_each_level() {
        let line = http_line(&raw(), "ours", "rps");
        assert_eq!(line.points, vec![(1.0, 2000.0), (16.0, 8000.0)]);
        let plot = throughput(&raw());
        let labels: Vec<&str> = plot.lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["ours", "rmcp"]);
    }

    #[test]
    fn python_is_named_in_the_cpu_title_not_drawn() {
        let mut raw = raw();
        for (i, round) in raw.as_array_mut().unwrap().iter_mut().enumerate() {
            let cpu = 400.0 + 10.0 * i as f64;
            round["python"] = json!({"http": {"levels": [
                {"conns": 1, "rps": 2000.0, "cpu_us_per_req": cpu},
                {"conns": 16, "rps": 2100.0, "cpu_us_per_req": cpu + 30.0}]}});
        }
        let plot = cpu(&raw);
        let labels: Vec<&str> = plot.lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["ours", "rmcp"]);
        assert_eq!(
            plot.title,
            "HTTP tools/call: server CPU time per call (python, not drawn: 410–440 µs)"
        );
        let labels: Vec<String> = throughput(&raw)
            .lines
            .into_iter()
            .map(|l| l.label)
            .collect();
        assert_eq!(
            labels,
            ["ours", "python", "rmcp"],
            "throughput draws every one"
        );
    }

    #[test]
    fn charts_are_drawn_from_the_data_present_and_name_what_they_show() {
        let dir = std::env::temp_dir().join(format!("xtask-charts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("raw.json"), raw().to_string()).unwrap();
        let written = draw(&dir, &dir).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["http-throughput.svg", "http-cpu.svg"]);
        let svg = std::fs::read_to_string(dir.join("http-throughput.svg")).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..60.min(svg.len())]);
        // plotters writes each text on a line of its own between its tags.
        let texts: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim()))
            .collect();
        for wanted in [
            "HTTP tools/call: requests per second",
            "ours",
            "rmcp",
            "1",
            "16",
        ] {
            assert!(texts.contains(&wanted), "no text {wanted:?} in {texts:?}");
        }
        // Ours's colour draws its line; the polyline is there, not only the legend.
        assert!(
            svg.contains("<polyline") && svg.contains("#1F64B4"),
            "{svg}"
        );
        std::fs::write(dir.join("scale.json"), "[not json").unwrap();
        let error = draw(&dir, &dir).unwrap_err();
        assert!(
            error.contains("scale.json: not the JSON a bench run writes"),
            "{error}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_scale_step_too_small_to_show_is_left_out_and_redis_reads_its_own_rss() {
        let scale = json!([
            {"server": "ours", "measured": {"kind": "tools", "steps": [
                {"units": 10, "kb_per_unit": 4.0, "call_p99_us": 130},
                {"units": 100, "kb_per_unit": 9.6, "call_p99_us": 140}]}},
            {"server": "ours", "measured": {"kind": "tasks", "steps": [
                {"units": 10000, "kb_per_unit": 0.3, "watched_kb_per_unit": 1.09, "call_p99_us": 150}]}},
        ]);
        let lines = scale_lines(&scale, "kb_per_unit");
        assert_eq!(lines[0].label, "registry tools (ours)");
        assert_eq!(lines[0].points, vec![(100.0, 9.6)]);
        assert_eq!(lines[1].label, "tasks in Redis (Redis's RSS) (ours)");
        assert_eq!(lines[1].points, vec![(10000.0, 1.09)]);
        // The p99 of every step is drawn: it needs no amount of memory to be read.
        let p99 = scale_lines(&scale, "call_p99_us");
        assert_eq!(p99[0].points, vec![(10.0, 130.0), (100.0, 140.0)]);
    }

    #[test]
    fn axis_numbers_group_thousands() {
        assert_eq!(whole(1_000_000.0), "1,000,000");
        assert_eq!(whole(100.0), "100");
        assert_eq!(whole(2.5), "2.5");
        assert_eq!(whole(4.0), "4");
        assert_eq!(whole(0.0), "0");
    }

    /// The charts in docs/performance/ are what their data, beside them, draws: a chart edited
    /// by hand, or data replaced without redrawing, fails here.
    #[test]
    fn the_committed_charts_are_drawn_from_the_committed_data() {
        let docs = super::super::workspace_root()
            .join("docs")
            .join("performance");
        let out = std::env::temp_dir().join(format!("xtask-charts-docs-{}", std::process::id()));
        let written = draw(&docs, &out).unwrap();
        assert!(!written.is_empty(), "docs/performance/ holds no chart data");
        for path in &written {
            let name = path.file_name().unwrap();
            let committed = std::fs::read_to_string(docs.join(name))
                .unwrap_or_else(|e| panic!("docs/performance/{name:?}: {e}"));
            let drawn = std::fs::read_to_string(path).unwrap();
            assert!(
                committed == drawn,
                "docs/performance/{name:?} differs from what its data draws: run cargo xtask bench --charts"
            );
        }
        std::fs::remove_dir_all(&out).unwrap();
    }
}
