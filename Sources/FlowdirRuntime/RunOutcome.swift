#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// What a run of the engine ended with.
public struct RunOutcome: Sendable {
    public var states: [String: NodeState]
    public var order: [String]
    /// Files dropped into inbox/ that this run refused, with why (each kept as `.rejected`).
    public var refused: [(file: String, reason: String)] = []
    /// Stopped (SIGINT, SIGTERM) before nothing more could happen (see Stopping.swift).
    public var stopped = false
    /// The signal that stopped it, as the command saw it.
    public var signal: Int32?

    /// 0 all succeeded (or skipped), 1 something failed or was cancelled, 2
    /// waiting; stopped by a signal, 128 + its number, as a shell reports it.
    public var exitCode: Int32 {
        if stopped { return 128 + (signal ?? SIGTERM) }
        let all = order.compactMap { states[$0] }
        if all.contains(where: { if case .failed = $0 { true } else if case .cancelled = $0 { true } else { false } }) { return 1 }
        if all.allSatisfy({ $0 == .succeeded || $0 == .skipped }) { return 0 }
        return 2
    }
}
