//! `Log2Histogram`: a fixed array of power-of-two buckets, for latencies and sizes that the
//! server publishes as Prometheus histograms.
//!
//! Recording is one `leading_zeros`, one array increment and one addition: no allocation, no
//! branch on the value beyond the clamp, so it can sit on the commit and add paths. Buckets
//! of doubling width keep the relative error under 2x at every scale (1 µs to half an hour)
//! with 32 counters, which is what a dashboard's percentile needs from a bookie; exact
//! percentiles stay the bench's job (hdrhistogram there).

/// Buckets per histogram: bucket `i` counts values in `(2^(i-1), 2^i]` (bucket 0 counts 0
/// and 1); the last one also takes everything larger.
pub const HISTOGRAM_BUCKETS: usize = 32;

/// Counts of values by power-of-two bucket, and their sum.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Log2Histogram {
    /// `buckets[i]` counts the values `v` with `2^(i-1) < v <= 2^i` (`v <= 1` for `i = 0`);
    /// the last bucket also counts every larger value.
    pub buckets: [u64; HISTOGRAM_BUCKETS],
    /// Sum of the values recorded (saturating).
    pub sum: u64,
}

impl Log2Histogram {
    /// The bucket `value` falls in.
    #[must_use]
    pub fn bucket_of(value: u64) -> usize {
        // ceil(log2(value)): the smallest i with value <= 2^i.
        let index = if value <= 1 {
            0
        } else {
            64 - (value - 1).leading_zeros() as usize
        };
        let index = index.min(HISTOGRAM_BUCKETS - 1);
        assert!(index < HISTOGRAM_BUCKETS);
        // The bucket's bounds hold the value (the last bucket has no upper bound).
        assert!(index == HISTOGRAM_BUCKETS - 1 || value <= 1 << index);
        assert!(index == 0 || value > 1 << (index - 1));
        index
    }

    /// The largest value bucket `index` counts (its Prometheus `le` bound), for every bucket
    /// but the last, whose bound is +Inf.
    #[must_use]
    pub fn bucket_bound(index: usize) -> u64 {
        assert!(index < HISTOGRAM_BUCKETS - 1);
        1 << index
    }

    /// Records `count` values equal to `value` (a batch of requests that waited alike).
    pub fn record_n(&mut self, value: u64, count: u64) {
        let index = Self::bucket_of(value);
        let before = self.buckets[index];
        self.buckets[index] += count;
        assert!(
            self.buckets[index] >= before,
            "a bucket never goes backwards"
        );
        self.sum = self.sum.saturating_add(value.saturating_mul(count));
    }

    /// Records one value.
    pub fn record(&mut self, value: u64) {
        self.record_n(value, 1);
    }

    /// Values recorded.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// Adds `other`'s counts to these (shards' histograms into the server's).
    pub fn merge(&mut self, other: &Log2Histogram) {
        for (mine, theirs) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *mine += theirs;
        }
        self.sum = self.sum.saturating_add(other.sum);
    }

    /// What was recorded since `earlier` (a snapshot of the same histogram): the counts of a
    /// time window. A bucket that went backwards (not possible for one histogram) counts 0.
    #[must_use]
    pub fn since(&self, earlier: &Log2Histogram) -> Log2Histogram {
        let mut window = Log2Histogram::default();
        for (index, bucket) in window.buckets.iter_mut().enumerate() {
            *bucket = self.buckets[index].saturating_sub(earlier.buckets[index]);
        }
        window.sum = self.sum.saturating_sub(earlier.sum);
        assert!(window.count() <= self.count());
        window
    }

    /// The bound of the bucket holding the `quantile` (0..=1) of the values, the quantile's
    /// upper estimate; `None` with nothing recorded. The last bucket reports its lower bound
    /// doubled (there is no upper one).
    #[must_use]
    pub fn quantile(&self, quantile: f64) -> Option<u64> {
        assert!((0.0..=1.0).contains(&quantile));
        let count = self.count();
        if count == 0 {
            return None;
        }
        // Lossy casts are fine here: the rank of a quantile over at most 2^64 values.
        #[allow(clippy::cast_precision_loss, clippy::cast_sign_loss)]
        #[allow(clippy::cast_possible_truncation)]
        let rank = ((quantile * count as f64).ceil() as u64).clamp(1, count);
        let mut seen = 0;
        for (index, bucket) in self.buckets.iter().enumerate() {
            seen += bucket;
            if seen >= rank {
                assert!(*bucket > 0, "the quantile's bucket holds a value");
                return Some(1 << index);
            }
        }
        unreachable!("rank <= count, and the buckets sum to count")
    }
}
