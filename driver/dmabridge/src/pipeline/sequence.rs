//! Dropped frames, counted from a capture driver's frame sequence numbers.
//!
//! A gap in the numbers is not always a lost frame. Drivers that number
//! frames from a clock rather than count them — vivid numbers each frame by
//! the jiffies since streaming started, rounded to frame periods — hand out
//! the same number twice when one frame's tick runs early, and skip the
//! next number when the following tick is on time again: every tick
//! delivered its frame, and none was lost. So a repeated number is a credit
//! that absorbs the next gap. GStreamer's `v4l2src` counts the same way
//! (after a repeat its expected offset runs one ahead, and the next gap
//! lands on it), so the two pipelines' counts compare — but for one
//! frame: `v4l2src` takes a stream's first number 0 as a repeat too, so it
//! misses the first real gap, which this counter counts.

/// Follows the sequence numbers of one capture stream.
///
/// ```
/// use dmabridge::pipeline::sequence::SequenceCounter;
/// let mut seq = SequenceCounter::default();
/// for s in [0, 1, 2, 2, 4, 5, 8] {
///     seq.observe(s);
/// }
/// // 2 repeated, 3 skipped: a late number, no frame lost; 6 and 7 lost.
/// assert_eq!((seq.dropped(), seq.skipped(), seq.repeated()), (2, 3, 1));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SequenceCounter {
    last: Option<u32>,
    /// Repeated numbers not yet matched by a gap.
    credit: u64,
    dropped: u64,
    skipped: u64,
    repeated: u64,
}

impl SequenceCounter {
    /// Takes the sequence number of the next frame dequeued. The numbers
    /// are `u32` and wrap: a step of up to half the range forward (across
    /// `u32::MAX` too) is progress; the same number, or any other, counts as
    /// a repeat.
    pub fn observe(&mut self, sequence: u32) {
        let Some(last) = self.last else {
            self.last = Some(sequence);
            return;
        };
        let step = sequence.wrapping_sub(last);
        if step == 0 || step > u32::MAX / 2 {
            // The same number again (or an earlier one): a frame numbered
            // early, whose successor's number will skip. The highest number
            // seen stays the one the next is measured from.
            self.repeated += 1;
            self.credit += 1;
            return;
        }
        self.last = Some(sequence);
        let missing = u64::from(step - 1);
        self.skipped += missing;
        let absorbed = missing.min(self.credit);
        self.credit -= absorbed;
        self.dropped += missing - absorbed;
    }

    /// Frames lost: numbers skipped, less those a repeated number made up
    /// for.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Numbers skipped, all gaps counted.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Frames that carried the number of the frame before them (or an
    /// earlier one).
    pub fn repeated(&self) -> u64 {
        self.repeated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(seqs: &[u32]) -> (u64, u64, u64) {
        let mut c = SequenceCounter::default();
        seqs.iter().for_each(|&s| c.observe(s));
        (c.dropped(), c.skipped(), c.repeated())
    }

    #[test]
    fn gaps_are_lost_frames_unless_a_repeat_made_up_for_them() {
        assert_eq!(count(&[]), (0, 0, 0));
        assert_eq!(count(&[7]), (0, 0, 0));
        assert_eq!(count(&[0, 1, 2, 3]), (0, 0, 0));
        assert_eq!(count(&[0, 1, 4]), (2, 2, 0));
        // A repeat absorbs the next gap, however far later, and only one
        // frame of it.
        assert_eq!(count(&[0, 0, 1, 2, 4]), (0, 1, 1));
        assert_eq!(count(&[0, 0, 1, 4]), (1, 2, 1));
        assert_eq!(count(&[0, 0, 0, 2, 4]), (0, 2, 2));
        // A gap before the repeat is not made up for.
        assert_eq!(count(&[0, 2, 2, 3]), (1, 1, 1));
        // Starting anywhere, wrapping at u32::MAX.
        assert_eq!(count(&[u32::MAX - 1, u32::MAX, 0, 1]), (0, 0, 0));
        assert_eq!(count(&[u32::MAX, 1]), (1, 1, 0));
        // A step back is a repeat, not four billion lost frames.
        assert_eq!(count(&[5, 3, 6]), (0, 0, 1));
    }
}
