//! Tests of the report's JSON and table.

use super::*;

#[test]
fn json_has_the_standard_keys_in_order_then_extras() {
    let mut report = Report::new("writes");
    report.count = 2000;
    report.bytes = 2_000_000;
    report.elapsed = Duration::from_secs(2);
    for value in [100, 200, 300, 400] {
        report.latency_us.record(value).expect("in range");
    }
    report.extra.push(("connections", 16.0));
    report.extra.push(("odd", f64::NAN));
    let json = report.to_json();
    let mut position = 0;
    for key in KEYS_STANDARD.iter().chain(["connections", "odd"].iter()) {
        let found = json[position..].find(&format!("\"{key}\":")).expect(key);
        position += found;
    }
    assert!(
        json.starts_with("{\"name\":\"writes\",\"ops_per_sec\":1000,"),
        "{json}"
    );
    assert!(json.contains("\"mb_per_sec\":1,"), "{json}");
    assert!(json.contains("\"max_us\":400,"), "{json}");
    assert!(json.ends_with("\"connections\":16,\"odd\":0}"), "{json}");
    assert!(report.table().contains("connections 16"));
}

#[test]
fn empty_report_is_all_zero_and_finite() {
    let json = Report::new("reads").to_json();
    assert!(json.contains("\"ops_per_sec\":0,"), "{json}");
    assert!(json.contains("\"p999_us\":0,"), "{json}");
    assert!(!json.contains("NaN") && !json.contains("inf"), "{json}");
}
