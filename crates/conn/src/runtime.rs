//! The runtime control work runs on (the measured path builds its own, one per driver thread).

/// The one tokio runtime for control-plane work (setup queries, the loaders, the probes'
/// sessions), built on first use and shared by every caller; the measured path builds its own.
pub fn control_runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(std::thread::available_parallelism().map_or(2, |n| n.get()))
            .thread_name("stampede-control")
            .enable_all()
            .build()
            .expect("a tokio runtime builds where threads can start")
    })
}
