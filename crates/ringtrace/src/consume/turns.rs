//! The order in which the consumer reads a channel's buffers: a packet of
//! each in turn, until none has one ready.
//!
//! Why not each buffer's whole backlog in a row: after a stall (the
//! consumer kept off the CPU, or blocked in a direct write queued behind
//! the page cache's writeback: 1.5 s measured in BENCHMARKS.md, "Late
//! packets with direct I/O") every buffer has a backlog. Emptied one after the other, buffer 0's
//! backlog reaches its file before buffer 1's first packet, and a live
//! reader (`view --follow`, which lets a stream that wrote nothing for a
//! second stop holding the others back) printed buffer 0's events before
//! older ones of buffer 1. In turns, every stream's file grows together.

/// Calls `one(b)` for each of buffers `0..n` in turn, again and again,
/// until every buffer's call has returned false once (`one` reads one
/// packet of buffer `b` and says whether there was one); a buffer that had
/// none is not asked again. Returns how many calls returned true.
pub(crate) fn in_turns(n: usize, mut one: impl FnMut(usize) -> bool) -> usize {
    let mut ready: Vec<usize> = (0..n).collect();
    let mut got = 0;
    while !ready.is_empty() {
        ready.retain(|&b| {
            let had = one(b);
            got += usize::from(had);
            had
        });
    }
    got
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_of_each_buffer_in_turn_until_all_are_empty() {
        // Backlogs of 3, 0, 1 and 2 packets.
        let mut left = [3, 0, 1, 2];
        let mut order = Vec::new();
        let got = in_turns(left.len(), |b| {
            order.push(b);
            if left[b] == 0 {
                return false;
            }
            left[b] -= 1;
            true
        });
        assert_eq!(got, 6);
        assert_eq!(left, [0; 4]);
        // Round 1: every buffer; round 2: those that had one; and so on.
        assert_eq!(order, [0, 1, 2, 3, 0, 2, 3, 0, 3, 0]);
        assert_eq!(in_turns(0, |_| unreachable!()), 0);
    }
}
