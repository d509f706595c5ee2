//! `Report`: the one result shape every bench subcommand prints and writes as JSON, so runs of
//! different subcommands, machines and commits can be compared key by key.

use hdrhistogram::Histogram;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

/// The result of one benchmark run.
pub struct Report {
    /// Subcommand: "disk", "journal", "writes", "reads".
    pub name: &'static str,
    /// Successful operations.
    pub count: u64,
    /// Failed operations.
    pub errors: u64,
    /// Measured wall time (warm-up excluded).
    pub elapsed: Duration,
    /// Payload bytes of the successful operations.
    pub bytes: u64,
    /// Latency of the successful operations in microseconds, see `latency_histogram`.
    pub latency_us: Histogram<u64>,
    /// Subcommand-specific numbers, printed and put into the JSON under their own names.
    pub extra: Vec<(&'static str, f64)>,
    /// Free-form lines printed under the table (machine, settings).
    pub notes: Vec<String>,
}

/// Keys `to_json` always writes; an extra must not reuse one.
const KEYS_STANDARD: [&str; 13] = [
    "name",
    "ops_per_sec",
    "mb_per_sec",
    "avg_us",
    "p50_us",
    "p95_us",
    "p99_us",
    "p999_us",
    "max_us",
    "count",
    "errors",
    "seconds",
    "spectrum_us",
];

/// Percentiles of `spectrum_us` in the JSON report: enough points for a percentile-spectrum
/// plot from p0 to max without shipping the histogram.
const SPECTRUM_PERCENTILES: [f64; 15] = [
    0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 99.995, 99.999, 100.0,
];

/// Highest latency a histogram tracks: 60 s in microseconds. Anything slower is recorded as
/// 60 s (`saturating_record`), which is already a failed benchmark.
const LATENCY_US_MAX: u64 = 60_000_000;

impl Report {
    /// An empty report with the standard latency histogram.
    pub fn new(name: &'static str) -> Self {
        Report {
            name,
            count: 0,
            errors: 0,
            elapsed: Duration::ZERO,
            bytes: 0,
            latency_us: Self::latency_histogram(),
            extra: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// A histogram with the standard bounds: 1 µs to 60 s, 3 significant digits.
    pub fn latency_histogram() -> Histogram<u64> {
        Histogram::new_with_bounds(1, LATENCY_US_MAX, 3).expect("constant bounds are valid")
    }

    /// Successful operations per second of `elapsed` (0 when nothing was measured).
    pub fn ops_per_sec(&self) -> f64 {
        per_second(self.count as f64, self.elapsed)
    }

    /// Payload megabytes (10^6 bytes) per second of `elapsed`.
    pub fn mb_per_sec(&self) -> f64 {
        per_second(self.bytes as f64 / 1e6, self.elapsed)
    }

    /// Prints the human-readable table to stdout.
    pub fn print(&self) {
        print!("{}", self.table());
    }

    /// The table `print` shows: throughput, latency in µs and ms, counts, extras, notes.
    pub fn table(&self) -> String {
        let latency = self.latency_summary();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{}: {:.1} ops/s, {:.2} MB/s over {:.3} s; count {}, errors {}",
            self.name,
            self.ops_per_sec(),
            self.mb_per_sec(),
            self.elapsed.as_secs_f64(),
            self.count,
            self.errors
        );
        let _ = writeln!(
            out,
            "  latency {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "avg", "p50", "p95", "p99", "p99.9", "max"
        );
        let _ = write!(out, "  µs      {:>10.1}", latency[0]);
        for value in &latency[1..] {
            let _ = write!(out, " {value:>10.0}");
        }
        let _ = write!(out, "\n  ms      ");
        for (index, value) in latency.iter().enumerate() {
            let separator = if index == 0 { "" } else { " " };
            let _ = write!(out, "{separator}{:>10.3}", value / 1000.0);
        }
        out.push('\n');
        if !self.extra.is_empty() {
            let extras: Vec<String> = self
                .extra
                .iter()
                .map(|(name, value)| format!("{name} {value}"))
                .collect();
            let _ = writeln!(out, "  {}", extras.join(", "));
        }
        for note in &self.notes {
            let _ = writeln!(out, "  {note}");
        }
        out
    }

    /// One JSON object: the standard keys in `KEYS_STANDARD` order, then every extra.
    /// Non-finite numbers are written as 0 so the output always parses.
    pub fn to_json(&self) -> String {
        let latency = self.latency_summary();
        let mut out = String::from("{");
        let _ = write!(out, "\"name\":{}", json_string(self.name));
        push_number(&mut out, "ops_per_sec", self.ops_per_sec());
        push_number(&mut out, "mb_per_sec", self.mb_per_sec());
        push_number(&mut out, "avg_us", latency[0]);
        for (key, value) in KEYS_STANDARD[4..9].iter().zip(&latency[1..]) {
            let _ = write!(out, ",\"{key}\":{}", *value as u64);
        }
        let _ = write!(out, ",\"count\":{},\"errors\":{}", self.count, self.errors);
        push_number(&mut out, "seconds", self.elapsed.as_secs_f64());
        // The latency spectrum, for plots: [percentile, µs] pairs.
        out.push_str(",\"spectrum_us\":[");
        for (index, percentile) in SPECTRUM_PERCENTILES.iter().enumerate() {
            let separator = if index == 0 { "" } else { "," };
            let value = if self.latency_us.is_empty() {
                0
            } else {
                self.latency_us.value_at_quantile(percentile / 100.0)
            };
            let _ = write!(out, "{separator}[{percentile},{value}]");
        }
        out.push(']');
        for (name, value) in &self.extra {
            // A duplicate key would make the JSON ambiguous: a programming error.
            assert!(
                !KEYS_STANDARD.contains(name),
                "extra {name} shadows a standard key"
            );
            push_number(&mut out, name, *value);
        }
        out.push('}');
        out
    }

    /// Writes `to_json` and a newline to `path`, replacing the file.
    pub fn write_json(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, format!("{}\n", self.to_json()))
    }

    /// avg, p50, p95, p99, p99.9, max in µs (all 0 for an empty histogram).
    fn latency_summary(&self) -> [f64; 6] {
        let histogram = &self.latency_us;
        if histogram.is_empty() {
            return [0.0; 6];
        }
        let quantile = |q: f64| histogram.value_at_quantile(q) as f64;
        [
            histogram.mean(),
            quantile(0.50),
            quantile(0.95),
            quantile(0.99),
            quantile(0.999),
            histogram.max() as f64,
        ]
    }
}

fn per_second(amount: f64, elapsed: Duration) -> f64 {
    let seconds = elapsed.as_secs_f64();
    if seconds > 0.0 {
        amount / seconds
    } else {
        0.0
    }
}

fn push_number(out: &mut String, key: &str, value: f64) {
    let value = if value.is_finite() { value } else { 0.0 };
    // Rust's `Display` for f64 never uses an exponent or NaN here, so it is valid JSON.
    let _ = write!(out, ",{}:{}", json_string(key), value);
}

fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
