//! `--awake`: keeps every CPU out of its idle state while the benchmarks run, with one
//! spinning thread per CPU at the kernel's lowest scheduling class (`SCHED_IDLE`).
//!
//! Why: a single-operation task is a chain of wake-ups (the driver's task, the
//! server's thread, the driver's task again). On a virtual machine whose idle CPUs halt
//! at once (guest halt-polling off, as `/sys/module/haltpoll/parameters/
//! guest_halt_poll_ns` shows with `0`), each wake-up of a halted CPU costs tens of
//! microseconds in the hypervisor. That cost is not a driver's, yet it decides these
//! rows, and it rewards the driver that keeps more threads busy. A `SCHED_IDLE` thread
//! runs only when nothing else wants the CPU and gives way as soon as anything wakes,
//! so the CPUs never halt and the ratio measures the drivers' own work.
//!
//! The spinners stop when the [`Awake`] guard is dropped; they burn otherwise idle CPU
//! time, and only during the run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use thread_priority::{
    set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy, ThreadPriority,
    ThreadSchedulePolicy,
};

/// The running spinners; dropping it stops and joins them.
pub struct Awake {
    stop: Arc<AtomicBool>,
    spinners: Vec<JoinHandle<()>>,
}

impl Awake {
    /// Starts one idle-class spinner per CPU. Fails (stopping those started) if the
    /// scheduling class cannot be set: a spinner at normal priority would take CPU
    /// time from the drivers instead of only idle time.
    pub fn start() -> Result<Awake, String> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let stop = Arc::new(AtomicBool::new(false));
        let mut awake = Awake {
            stop: stop.clone(),
            spinners: Vec::new(),
        };
        for index in 0..cpus {
            let stop = stop.clone();
            let (ready, started) = std::sync::mpsc::channel();
            let spinner = std::thread::Builder::new()
                .name(format!("awake-{index}"))
                .spawn(move || {
                    let idle = set_thread_priority_and_policy(
                        thread_native_id(),
                        ThreadPriority::Min,
                        ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle),
                    );
                    let ok = idle.is_ok();
                    let _ = ready.send(idle.map_err(|e| format!("{e:?}")));
                    while ok && !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
                .map_err(|e| format!("cannot start a spinner: {e}"))?;
            awake.spinners.push(spinner);
            match started.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(format!("cannot make a spinner SCHED_IDLE: {e}")),
                Err(_) => return Err("a spinner stopped before it started".into()),
            }
        }
        Ok(awake)
    }
}

impl Drop for Awake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for spinner in self.spinners.drain(..) {
            let _ = spinner.join();
        }
    }
}
