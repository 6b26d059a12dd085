#if canImport(Glibc)
import Glibc
#endif

/// Work on a thread of its own, whose result is waited for with `value()`:
/// for reads that overlap at start-up. Not on Dispatch's pool: a pool
/// thread waiting for work queued to the same pool waits until the pool
/// grows, which it does only after about a second (measured: the first job
/// of a run started 1 s late).
final class Background<Value>: ThreadBody, @unchecked Sendable {
    private var thread = pthread_t()
    private var result: Value?
    private var work: (() -> Value)?
    private var joined = false

    init(_ work: @escaping () -> Value) {
        self.work = work
        super.init()
        if let started = startThread() {
            thread = started
        } else {
            // No thread to be had: do it here, now.
            run()
            joined = true
        }
    }

    override func run() {
        result = work?()
        work = nil
    }

    /// Waits for the work to end (once) and returns what it made.
    func value() -> Value {
        if !joined {
            pthread_join(thread, nil)
            joined = true
        }
        return result!
    }

    /// Dropped unasked (a caller that threw): the thread holds the last
    /// reference, so this runs on it once the work is done; nobody joins it.
    deinit {
        if !joined { pthread_detach(thread) }
    }
}

/// What a plain pthread runs: subclasses override `run`. (A C function
/// cannot capture a generic type, so `Background` needs this base.)
class ThreadBody {
    func run() {}

    /// Starts a thread running `run()`, which holds this object until it
    /// returns; `nil` when no thread can be had.
    final func startThread() -> pthread_t? {
        let box = Unmanaged.passRetained(self)
        var thread = pthread_t()
        guard pthread_create(&thread, nil, { raw in
            Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, box.toOpaque()) == 0 else {
            box.release()
            return nil
        }
        return thread
    }
}
