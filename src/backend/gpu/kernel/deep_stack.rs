//! A thread of its own, with a deep stack, for compiling WGSL an
//! application wrote: naga lowers an expression by recursing once per
//! operand (`x + x + ... + x`, an `else if` chain), so a long custom body
//! overflowed the caller's stack (a worker thread's 2 MiB at a few
//! thousand operands) and aborted the process.

/// The stack the compile of a custom kernel runs on. A body has at most
/// `MAX_CUSTOM_BODY` bytes (`ops/custom.rs`): the deepest such bodies
/// (`x+x+...`, `~~~...x`, `!!!...`, one operand or operator per byte or
/// two) compile within 32 MiB of stack in a debug build, and overflow
/// 16 MiB; this is four times that.
#[cfg(not(target_arch = "wasm32"))]
const DEEP_STACK: usize = 128 << 20;

/// Runs `f` on a scoped thread with [`DEEP_STACK`] bytes of stack (its
/// pages are taken as they are touched), and returns what it returns; a
/// panic in `f` goes on in the caller. Where no such thread can be
/// started, `f` runs on the caller's thread.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn on_deep_stack<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let mut f = Some(f);
    let ran = std::thread::scope(|scope| {
        let f = &mut f;
        let spawned = std::thread::Builder::new()
            .name("webtensor wgsl".into())
            .stack_size(DEEP_STACK)
            .spawn_scoped(scope, move || f.take().map(|f| f()));
        spawned.ok().map(|thread| match thread.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        })
    });
    match (ran.flatten(), f) {
        (Some(result), _) => result,
        (None, Some(f)) => f(),
        (None, None) => unreachable!("the thread ran f and returned its result"),
    }
}

/// In a browser (no threads) `f` runs here: the browser compiles the
/// WGSL, not naga.
#[cfg(target_arch = "wasm32")]
pub(crate) fn on_deep_stack<R>(f: impl FnOnce() -> R) -> R {
    f()
}
