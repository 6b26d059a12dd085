#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// Runs a program of the user's (sbatch, git) and gives its exit status
/// with stdout and stderr together, as a person would read them.
public enum CommandOutput {
    public static func run(_ argv: [String], in directory: String = "/", environment: [String: String] = [:]) async -> (status: Int32, output: String) {
        let log = "/tmp/flowdir-command-\(getpid())-\(RandomID.uuid()).out"
        defer { unlink(log) }
        let end: (LocalTermination, [UInt8]?) = await withCheckedContinuation { done in
            LocalRunner().start(LocalJob(argv: argv, workingDirectory: directory, environment: environment, logPath: log, grace: 2),
                                cancel: CancelToken()) { end, kept in
                done.resume(returning: (end, kept))
            }
        }
        let bytes = end.1 ?? ((try? LocalFileSystem().readFile(log, limit: 16 << 20)) ?? [])
        let text = String(decoding: bytes, as: UTF8.self)
        switch end.0 {
        case .exited(let code): return (code, text)
        case .signaled(let s): return (128 + s, text)
        case .spawnFailed(let why): return (127, "\(argv.first ?? "?"): \(why)")
        }
    }
}
