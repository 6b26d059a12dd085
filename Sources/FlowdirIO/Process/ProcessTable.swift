#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// What /proc says about processes. PID 1 here does not reap orphans, so a
/// killed process can linger as a zombie: `kill(pid, 0)` would call it
/// alive; its state in /proc/PID/stat does not.
public enum ProcessTable {
    /// The process group of a live (not zombie) process, or `nil`.
    public static func liveGroup(of pid: Int32) -> Int32? {
        guard let bytes = try? LocalFileSystem().readFile("/proc/\(pid)/stat", limit: 4096) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        // The command name may hold spaces and parentheses: fields follow the last ")".
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 3, fields[0] != "Z" else { return nil }
        return Int32(fields[2])
    }

    /// Alive and not a zombie.
    public static func isAlive(_ pid: Int32) -> Bool { liveGroup(of: pid) != nil }

    /// The live processes of a process group.
    public static func members(ofGroup group: Int32) -> [Int32] {
        ((try? LocalFileSystem().listDirectory("/proc")) ?? []).compactMap(Int32.init).filter { liveGroup(of: $0) == group }
    }

    /// The process groups of live processes that were started for one of
    /// `runDirectories` (a job's work folder), keyed by that folder: those
    /// whose environment, as they were started with it, names it as
    /// `FLOWDIR_RUN_DIR`. Every job is started with it and its children
    /// inherit it, so a job left by a flowdir that was killed is found
    /// without flowdir having written anything down per job (a pid file
    /// cost four file operations a job). Not by working directory: a
    /// person's shell may be in that folder. A job that started a program
    /// with an empty environment (`env -i`) is not found.
    public static func jobGroups(runDirectories: [String]) -> [String: Set<Int32>] {
        let wanted = Dictionary(runDirectories.compactMap { dir in Files.realPath(dir).map { ($0, dir) } },
                                uniquingKeysWith: { a, _ in a })
        guard !wanted.isEmpty else { return [:] }
        let ownGroup = getpgrp()
        var found: [String: Set<Int32>] = [:]
        for pid in ((try? LocalFileSystem().listDirectory("/proc")) ?? []).compactMap(Int32.init) where pid != getpid() {
            guard let dir = runDirectory(of: pid, in: wanted), let group = liveGroup(of: pid),
                  group > 1, group != ownGroup else { continue }
            found[dir, default: []].insert(group)
        }
        return found
    }

    /// Which of `wanted` (real path → as given) a process was started for.
    private static func runDirectory(of pid: Int32, in wanted: [String: String]) -> String? {
        let tag = Array("FLOWDIR_RUN_DIR=".utf8)
        guard let environ = try? LocalFileSystem().readFile("/proc/\(pid)/environ", limit: 1 << 22) else { return nil }
        for entry in environ.split(separator: 0, omittingEmptySubsequences: true) where entry.starts(with: tag) {
            let value = String(decoding: entry.dropFirst(tag.count), as: UTF8.self)
            if let dir = wanted[value] ?? Files.realPath(value).flatMap({ wanted[$0] }) { return dir }
        }
        return nil
    }
}
