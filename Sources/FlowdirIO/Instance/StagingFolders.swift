#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// The hidden folder an instance is built in before it is renamed into
/// place (`InstanceCreator`): `.<name>.creating-<pid>-<8 hex>`, and what a
/// creator killed half-way leaves of them.
public enum StagingFolders {
    /// A new staging folder's name for `directory`, made by this process.
    static func name(for directory: String) -> String {
        ".\(Path.basename(directory)).creating-\(Files.processID)-\(RandomID.uuid().prefix(8))"
    }

    /// Removes the half-built folders that a `new` killed half-way left
    /// beside `directory`, whatever instance it was making: hidden
    /// `.<name>.creating-<pid>-<8 hex>` folders (`InstanceCreator`) whose
    /// creator is gone from this machine, or whose pid now names a process
    /// that started after the folder last changed (the pid was reused, as
    /// after a reboot). Folders of an older flowdir, without a pid, go after
    /// an hour. A creator still at work keeps its folder.
    public static func removeLeftovers(beside directory: String) {
        let parent = Path.directory(of: directory).isEmpty ? "." : Path.directory(of: directory)
        for name in (try? LocalFileSystem().listDirectory(parent)) ?? [] where name.hasPrefix(".") {
            guard let creator = stagingCreator(name) else { continue }
            let full = Path.join(parent, name)
            var st = stat()
            guard lstat(full, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else { continue }
            let changed = Double(st.st_mtim.tv_sec)
            if let pid = creator {
                if pid == getpid() { continue }
                if ProcessTable.isAlive(pid), !(startTime(of: pid).map { $0 > changed + 1 } ?? false) { continue }
            } else if Double(time(nil)) - changed < 3600 {
                continue
            }
            try? Files.removeTree(full)
        }
    }

    /// For `.<name>.creating-<pid>-<8 hex>`, `pid`; for an older flowdir's
    /// `.<name>.creating-<8 hex>`, `.some(nil)`; for any other name, `nil`.
    static func stagingCreator(_ name: String) -> Int32?? {
        let parts = name.split(separator: "-", omittingEmptySubsequences: false)
        guard let random = parts.last, random.count == 8, random.allSatisfy(\.isHexDigit) else { return nil }
        let pid = parts.count >= 3 ? Int32(parts[parts.count - 2]) : nil
        let stem = name.dropLast(random.count + 1 + (pid.map { "\($0)".count + 1 } ?? 0))
        // A dot, the instance's folder name, `.creating`.
        guard stem.hasSuffix(".creating"), stem.dropLast(".creating".count).count > 1 else { return nil }
        return .some(pid)
    }

    /// When a live process started (seconds since the epoch), from /proc.
    static func startTime(of pid: Int32) -> Double? {
        // Fields after the command name; the 22nd of the line, starttime, is the 20th of these.
        guard let fields = ProcessTable.statFields(of: pid),
              let boot = try? LocalFileSystem().readFile("/proc/stat", limit: 1 << 16) else { return nil }
        let btime = String(decoding: boot, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("btime ") }
        guard fields.count > 19, let ticks = Double(fields[19]), let btime, let since = Double(btime.dropFirst(6)) else { return nil }
        let hz = Double(sysconf(Int32(_SC_CLK_TCK)))
        return hz > 0 ? since + ticks / hz : nil
    }
}
