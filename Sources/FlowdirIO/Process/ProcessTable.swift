#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// What /proc says about processes. PID 1 here does not reap orphans, so a
/// killed process can linger as a zombie: `kill(pid, 0)` would call it
/// alive; its state in /proc/PID/stat does not.
public enum ProcessTable {
    /// The fields of /proc/PID/stat after the command name: the state
    /// first (the line's 3rd field), then the parent, the group, … `nil`
    /// when there is no such process.
    public static func statFields(of pid: Int32) -> [Substring]? {
        guard let bytes = try? LocalFileSystem().readFile("/proc/\(pid)/stat", limit: 4096) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        // The command name may hold spaces and parentheses: fields follow the last ")".
        guard let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }

    /// The process group of a live (not zombie) process, or `nil`.
    public static func liveGroup(of pid: Int32) -> Int32? {
        guard let fields = statFields(of: pid), fields.count > 3, fields[0] != "Z" else { return nil }
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
    /// cost four file operations a job). Not by working directory alone: a
    /// person's shell may be in that folder. A job that started a program
    /// with an empty environment (`env -i`) is not found.
    ///
    /// A job caught on its way to its program has no such environment yet:
    /// before exec it is still a copy of the flowdir that made it (named
    /// after its `flowdir-spawn` thread, sharing that flowdir's memory and
    /// so its environment), and inside exec its environment reads empty.
    /// Such a process is named by its working directory (a job changes to
    /// its folder just before exec, after it has its own group); one not
    /// there yet, or one whose environment reads empty, is looked at again
    /// a moment later, for at most `patience`.
    public static func jobGroups(runDirectories: [String], patience: Duration = .milliseconds(200),
                                 clock: FlowdirClock = .system) -> [String: Set<Int32>] {
        let wanted = Dictionary(runDirectories.compactMap { dir in Files.realPath(dir).map { ($0, dir) } },
                                uniquingKeysWith: { a, _ in a })
        guard !wanted.isEmpty else { return [:] }
        let ownGroup = getpgrp()
        var found: [String: Set<Int32>] = [:]
        let deadline = clock.instant + patience
        var look = ((try? LocalFileSystem().listDirectory("/proc")) ?? []).compactMap(Int32.init).filter { $0 != getpid() }
        while true {
            var undecided: [Int32] = []
            for pid in look {
                let seen = classify(pid, in: wanted)
                if case .undecided = seen { undecided.append(pid); continue }
                guard case .job(let dir) = seen, let group = liveGroup(of: pid), group > 1, group != ownGroup else { continue }
                found[dir, default: []].insert(group)
            }
            guard !undecided.isEmpty, clock.instant < deadline else { return found }
            clock.pause(for: .milliseconds(5))
            look = undecided
        }
    }

    private enum Seen { case job(String), other, undecided }

    /// Whether a process is a job of one of `wanted` (real path → as given).
    private static func classify(_ pid: Int32, in wanted: [String: String]) -> Seen {
        let tag = Array("FLOWDIR_RUN_DIR=".utf8)
        guard let environ = try? LocalFileSystem().readFile("/proc/\(pid)/environ", limit: 1 << 22) else { return .other }
        for entry in environ.split(separator: 0, omittingEmptySubsequences: true) where entry.starts(with: tag) {
            let value = String(decoding: entry.dropFirst(tag.count), as: UTF8.self)
            if let dir = wanted[value] ?? Files.realPath(value).flatMap({ wanted[$0] }) { return .job(dir) }
        }
        let beforeExec = (try? LocalFileSystem().readFile("/proc/\(pid)/comm", limit: 64)) == Array("flowdir-spawn\n".utf8)
        guard beforeExec || environ.isEmpty else { return .other }
        let cwd = Files.realPath("/proc/\(pid)/cwd").flatMap { wanted[$0] }
        if beforeExec, let cwd { return .job(cwd) }
        // Not in its folder yet, or inside exec: its next look decides. An
        // empty environment that stays empty is a program's own (`env -i`).
        return beforeExec || cwd != nil ? .undecided : .other
    }
}
