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
}
