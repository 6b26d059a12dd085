#if canImport(Glibc)
import Glibc
#endif

/// A small lock for state shared with callbacks from other threads.
final class Mutex: @unchecked Sendable {
    private var m = pthread_mutex_t()
    init() { pthread_mutex_init(&m, nil) }
    deinit { pthread_mutex_destroy(&m) }
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(&m)
        defer { pthread_mutex_unlock(&m) }
        return try body()
    }
}

/// A value shared between threads, behind a lock.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = Mutex()
    private var value: Value
    public init(_ value: Value) { self.value = value }
    public func locked<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try lock.locked { try body(&value) }
    }
}
