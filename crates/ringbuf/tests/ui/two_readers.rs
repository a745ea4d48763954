// Two readers of one buffer at once: the second borrow of the read side
// does not compile.
use ringbuf::{Buffer, Config, ReadSide};

fn two<C: Config>(b: &Buffer<C>, rs: &mut ReadSide) {
    let first = rs.reader(b);
    let second = rs.reader(b);
    drop((first, second));
}

fn main() {}
