//! Medians, percentiles and spreads of timings, and how rows are printed.

/// What a set of samples comes to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// The median.
    pub median: f64,
    /// The 99th percentile (nearest rank).
    pub p99: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
}

/// The `p`-th percentile (0 to 100) of sorted samples, by nearest rank.
///
/// # Panics
/// When there are no samples.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    assert!(!sorted.is_empty(), "no samples");
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Summarises samples (in any order).
///
/// # Panics
/// When there are no samples.
pub fn summarize(samples: &[f64]) -> Summary {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    Summary {
        median: median_sorted(&sorted),
        p99: percentile(&sorted, 99.0),
        min: sorted[0],
        max: sorted[sorted.len() - 1],
    }
}

fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The median of per-round values, with their range: `12.3 (11.9-13.0)`.
pub fn median_range(values: &[f64], digits: usize) -> String {
    let s = summarize(values);
    format!("{:.d$} ({:.d$}-{:.d$})", s.median, s.min, s.max, d = digits)
}

/// Per-round ratios `a[i] / b[i]`.
pub fn ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x / y).collect()
}

/// The order the clients run in, in round `round`: as given in even
/// rounds, reversed in odd ones (A B C, C B A, ...), so that no client
/// always runs first or last.
pub fn round_order<T: Copy>(clients: &[T], round: usize) -> Vec<T> {
    let mut order = clients.to_vec();
    if round % 2 == 1 {
        order.reverse();
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_percentiles_follow_nearest_rank() {
        let s = summarize(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!((s.median, s.min, s.max), (3.0, 1.0, 5.0));
        assert_eq!(s.p99, 5.0);
        let even = summarize(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!(even.median, 2.5);
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&hundred, 99.0), 99.0);
        assert_eq!(percentile(&hundred, 50.0), 50.0);
        assert_eq!(percentile(&hundred, 0.0), 1.0);
    }

    #[test]
    fn ranges_and_ratios_read_per_round() {
        assert_eq!(median_range(&[2.0, 1.0, 4.0], 1), "2.0 (1.0-4.0)");
        assert_eq!(ratios(&[2.0, 9.0], &[1.0, 3.0]), vec![2.0, 3.0]);
    }

    #[test]
    fn the_order_flips_every_round() {
        assert_eq!(round_order(&['a', 'b', 'c'], 0), vec!['a', 'b', 'c']);
        assert_eq!(round_order(&['a', 'b', 'c'], 1), vec!['c', 'b', 'a']);
        assert_eq!(round_order(&['a', 'b', 'c'], 2), vec!['a', 'b', 'c']);
    }
}
