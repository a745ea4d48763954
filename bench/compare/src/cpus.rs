//! The CPUs of the measurements that pin their threads
//! (`scaling_interleaved.rs`, `c_interleaved.rs`).

/// Pins the calling thread to `cpu`.
pub fn pin(cpu: usize) -> Result<(), String> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET indexes its
    // array with bounds checks; sched_setaffinity reads the set we pass
    // with its size.
    let r = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(format!(
            "pinning to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        ))
    }
}

/// The first two CPUs this process may run on.
pub fn two() -> Result<[usize; 2], String> {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        set
    };
    // SAFETY: CPU_ISSET reads within the set for any index below
    // CPU_SETSIZE.
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .take(2)
        .collect();
    match cpus[..] {
        [a, b] => Ok([a, b]),
        _ => Err("2 threads on 2 CPUs: this process may run on one CPU only".into()),
    }
}

/// The CPU the calling thread runs on now.
pub fn current() -> Result<usize, String> {
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    usize::try_from(c).map_err(|_| std::io::Error::last_os_error().to_string())
}
