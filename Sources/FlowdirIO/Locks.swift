import Synchronization

/// A value shared between threads, behind the standard library's `Mutex`.
/// A class because a `Mutex` cannot be copied: the closures, tasks and
/// objects that share the value hold this one reference. An object that
/// only guards fields of its own holds a `Mutex` itself instead.
public final class Locked<Value>: Sendable {
    private let mutex: Mutex<Value>
    public init(_ value: consuming sending Value) { mutex = Mutex(value) }
    /// Runs `body` with the value, the lock held (not reentrant: `body`
    /// must not lock this value again).
    public func locked<T, E: Error>(_ body: (inout sending Value) throws(E) -> sending T) throws(E) -> sending T {
        try mutex.withLock(body)
    }
}
